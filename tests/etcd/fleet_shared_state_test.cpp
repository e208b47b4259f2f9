// What a fleet's trackers share through etcd beyond the registry proper:
// upload leases (a chunk leased through one tracker is refused through the
// others, and no tracker's GC sweeps it) and the list of issued tokens (a
// token minted beside one tracker is listed by every other).
#include <catch2/catch.hpp>
#include <filesystem>
#include <unordered_set>

#include "common/tracker_metrics.h"
#include "etcd/etcd_test_env.h"
#include "kv/etcd_kv.h"
#include "registry/registry_store.h"
#include "shoal/file_origin.h"
#include "shoal/origin.h"
#include "shoal/sha256.h"
#include "shoal/token.h"
#include "shoal/utc_time.h"
#include "storage/chunk_gc.h"
#include "storage/upload_leases.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

namespace shoal::tracker {
namespace {

using shoal::testing::ProcessResult;
using shoal::testing::RunProcess;

ChunkId SomeChunk(const std::string& name) {
  return ChunkId::From(Sha256::Of(name.data(), name.size()));
}

// etcd://host:port,.../<prefix>, as --registry takes it.
std::string RegistryUrl(const std::string& prefix) {
  std::string hosts;
  for (const std::string& e : shoal_test::EtcdEndpoints()) {
    hosts += (hosts.empty() ? "" : ",") + e.substr(e.find("://") + 3);
  }
  return "etcd://" + hosts + "/" + prefix;
}

// `shoal-tracker token ARGS...`; fails the test if it fails.
std::string Token(std::vector<std::string> args) {
  args.insert(args.begin(), {shoal::testing::TrackerBinary(), "token"});
  ProcessResult r = RunProcess(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

// The line of `token list` output that names `id`; empty if none.
std::string LineOf(const std::string& listing, const std::string& id) {
  size_t at = listing.find(id + " ");
  if (at == std::string::npos) return "";
  return listing.substr(at, listing.find('\n', at) - at);
}

}  // namespace

TEST_CASE("a chunk leased through one tracker on etcd is refused through another",
          "[etcd][leases]") {
  const std::string prefix = shoal_test::FreshPrefix("leases");
  RegistryStore a(shoal_test::OpenEtcdKv(prefix), nullptr),
      b(shoal_test::OpenEtcdKv(prefix), nullptr);
  auto leases_a = NewUploadLeases(RegistryUrl(prefix), a);
  auto leases_b = NewUploadLeases(RegistryUrl(prefix), b);
  std::vector<ChunkId> ids;
  for (int i = 0; i < 150; ++i) ids.push_back(SomeChunk("chunk " + std::to_string(i)));
  std::vector<ChunkId> first_half(ids.begin(), ids.begin() + 75);

  const int64_t now = NowMs(), ttl = 60000;
  auto won = leases_a->Claim(first_half, "pub-1", now, ttl).value();
  CHECK(won == std::vector<bool>(75, true));
  // An overlapping publish through the other tracker uploads only the rest.
  auto held = leases_b->Claim(ids, "pub-2", now, ttl).value();
  for (size_t i = 0; i < ids.size(); ++i) CHECK(held[i] == (i >= 75));
  CHECK(leases_a->Leased(now, false).value().size() == 150);

  // Released through a: b may take them. Expired: anyone may.
  REQUIRE(leases_a->Release({ids[0]}).ok());
  CHECK(leases_b->Claim({ids[0], ids[1]}, "pub-2", now, ttl).value() ==
        std::vector<bool>{true, false});
  CHECK(leases_b->Claim({ids[1]}, "pub-2", now + ttl, ttl).value() == std::vector<bool>{true});
}

TEST_CASE("chunk GC through one tracker on etcd spares a chunk leased through another",
          "[etcd][leases][gc]") {
  shoal::testing::TempDir tmp;
  const std::string prefix = shoal_test::FreshPrefix("leases-gc");
  RegistryStore a(shoal_test::OpenEtcdKv(prefix), nullptr),
      b(shoal_test::OpenEtcdKv(prefix), nullptr);
  auto leases_a = NewUploadLeases(RegistryUrl(prefix), a);
  auto leases_b = NewUploadLeases(RegistryUrl(prefix), b);
  auto origin = NewFileOrigin(tmp / "origin").value();
  const ChunkId leased = SomeChunk("leased"), loose = SomeChunk("loose");
  for (const ChunkId& id : {leased, loose}) {
    REQUIRE(origin->Put(ChunkKey(id), reinterpret_cast<const uint8_t*>("data"), 4).ok());
  }
  // Indexed long ago and used by no version: garbage unless leased.
  REQUIRE(a.AddChunks({{leased, 4}, {loose, 4}}, 1).ok());
  REQUIRE(leases_b->Claim({leased}, "pub-2", NowMs(), 60000).value() == std::vector<bool>{true});

  TrackerMetrics metrics;
  GcResult r = RunChunkGc(a, *origin, *leases_a, metrics, false, 0).value();
  CHECK(r.swept == 1);
  CHECK(r.young == 1);
  CHECK(origin->Head(ChunkKey(leased)).ok());
  CHECK_FALSE(origin->Head(ChunkKey(loose)).ok());

  REQUIRE(leases_b->Release({leased}).ok());
  r = RunChunkGc(a, *origin, *leases_a, metrics, false, 0).value();
  CHECK(r.swept == 1);
  CHECK_FALSE(origin->Head(ChunkKey(leased)).ok());
}

TEST_CASE("a token minted beside one tracker of an etcd fleet is listed through another",
          "[etcd][token]") {
  shoal::testing::TempDir tmp;
  const std::string registry = RegistryUrl(shoal_test::FreshPrefix("tokens"));
  const std::string dir_a = tmp / "tracker-a", dir_b = tmp / "tracker-b";
  std::filesystem::create_directories(dir_b);
  auto mint = [&](const std::string& subject) {
    std::string token = Token({"create", "--data-dir", dir_a, "--registry", registry, "--ns",
                               "team-a", "--role", "write", "--subject", subject});
    return PeekTokenClaims(token.substr(0, token.find('\n')))->id;
  };
  const std::string kept = mint("ci-1"), revoked = mint("ci-2");
  // One minted on b without --registry stays in b's file, and b lists it too.
  std::string local = Token({"create", "--data-dir", dir_b, "--ns", "team-a", "--subject", "dev"});
  const std::string local_id = PeekTokenClaims(local.substr(0, local.find('\n')))->id;

  Token({"revoke", "--data-dir", dir_b, "--registry", registry, "--id", revoked});
  std::string listing = Token({"list", "--data-dir", dir_b, "--registry", registry});
  INFO(listing);
  CHECK_THAT(LineOf(listing, kept), Catch::Contains("ci-1") && Catch::EndsWith("active"));
  CHECK_THAT(LineOf(listing, revoked), Catch::Contains("ci-2") && Catch::Contains("revoked "));
  CHECK_THAT(LineOf(listing, local_id), Catch::Contains("dev"));
  // Each token once, though a's file and the registry both hold two of them.
  std::string again = Token({"list", "--data-dir", dir_a, "--registry", registry});
  CHECK(again.find(kept) == again.rfind(kept));
  CHECK(LineOf(again, local_id).empty());

  // A running tracker on the same etcd answers GET /v1/tokens likewise.
  shoal::testing::TrackerProcess b(
      dir_b, {"--origin", "file://" + (tmp / "origin"), "--registry", registry});
  b.Start();
  const std::string admin = b.MintToken("*", "admin", "root");
  std::string served = Token(
      {"list", "--tracker", "http://127.0.0.1:" + std::to_string(b.http_port()), "--token", admin});
  INFO(served);
  CHECK_THAT(LineOf(served, kept), Catch::EndsWith("active"));
  CHECK_THAT(LineOf(served, revoked), Catch::Contains("revoked "));
  CHECK_THAT(LineOf(served, local_id), Catch::Contains("dev"));
}

}  // namespace shoal::tracker
