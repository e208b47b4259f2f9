// Hostile calls straight to the tracker's Cap'n Proto RPC, past the CLI's
// own checks, and the retention rule.
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "proto/kj_status.h"
#include "shoal/manifest.h"
#include "shoal/manifest_codec.h"
#include "shoal/piece_hasher.h"
#include "shoal/proto/manifest.capnp.h"
#include "shoal/proto/tracker.capnp.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

using namespace shoal;
using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

// A raw RPC session with one token.
struct RawClient {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyClient> rpc;
  proto::Registry::Client registry = nullptr;

  RawClient(const std::string& address, const std::string& token) {
    stream = io.provider->getNetwork()
                 .parseAddress(address)
                 .wait(io.waitScope)
                 ->connect()
                 .wait(io.waitScope);
    rpc = kj::heap<capnp::TwoPartyClient>(*stream);
    auto req = rpc->bootstrap().castAs<proto::Gateway>().authenticateRequest();
    req.setToken(token);
    registry = req.send().wait(io.waitScope).getRegistry();
  }

  // The error a commit of these bytes gets, or "" on success.
  std::string Commit(const std::string& bytes) {
    std::string error;
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                   auto req = registry.commitRequest();
                   req.setManifest(
                       kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()));
                   req.send().wait(io.waitScope);
                 })) {
      error = StatusFromException(*e, "tracker").ToString();
    }
    return error;
  }
};

Manifest OneFileManifest(const std::string& path, const std::string& creator) {
  std::string data(40000, 'x');
  FileHashes h = HashBuffer(reinterpret_cast<const uint8_t*>(data.data()), data.size(), 16384);
  Manifest m;
  m.ns = "team-a";
  m.name = "m";
  m.created_by = creator;
  m.piece_size = 16384;
  FileEntry f;
  f.path = path;
  f.size = data.size();
  f.pieces_root = h.pieces_root;
  f.piece_layer = h.piece_layer;
  m.files.push_back(f);
  return m;
}

// Canonical bytes of a manifest that skips ValidateManifest, as a hostile
// client would send them.
std::string RawBytes(const std::function<void(proto::Manifest::Builder)>& fill) {
  capnp::MallocMessageBuilder b;
  auto root = b.initRoot<proto::Manifest>();
  root.setFormatVersion(1);
  root.setNamespace("team-a");
  root.setName("m");
  root.setCreatedBy("trainer");
  root.setPieceSize(16384);
  fill(root);
  auto words = capnp::canonicalize(root.asReader());
  return std::string(reinterpret_cast<const char*>(words.asBytes().begin()),
                     words.asBytes().size());
}

}  // namespace

TEST_CASE("manifests that fail validation are refused when sent straight to the RPC",
          "[tracker][hostile]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker", {"--origin", "file://" + (tmp / "origin")});
  tracker.Start();
  RawClient c(tracker.rpc_address(), tracker.MintToken("team-a", "write", "trainer"));

  CHECK_THAT(c.Commit("not a manifest at all!!"), Catch::Contains("manifest refused"));
  CHECK_THAT(c.Commit(std::string(4096, '\0')), Catch::Contains("manifest refused"));
  CHECK_THAT(c.Commit(RawBytes([](proto::Manifest::Builder r) {
    auto f = r.initFiles(1)[0];
    f.setPath("../../etc/passwd");
    f.setSize(0);
  })),
             Catch::Contains("contains '..'"));
  CHECK_THAT(c.Commit(RawBytes([](proto::Manifest::Builder r) { r.setPieceSize(1000); })),
             Catch::Contains("power of two"));
  CHECK_THAT(c.Commit(RawBytes([](proto::Manifest::Builder r) {
    auto f = r.initFiles(1)[0];
    f.setPath("a");
    f.setSize(100000);
    f.initPiecesRoot(32)[0] = 1;
    f.initPieceLayer(64);
  })),
             Catch::Contains("piece hashes, but its size"));
  // Valid, but another subject's name on it.
  CHECK_THAT(c.Commit(*EncodeManifest(OneFileManifest("a.bin", "someone-else"))),
             Catch::Contains("the token is for 'trainer'"));
  // Valid, but its chunks were never uploaded.
  CHECK_THAT(c.Commit(*EncodeManifest(OneFileManifest("a.bin", "trainer"))),
             Catch::Contains("are not in file://"));
  // A tag on a version that does not exist.
  std::string error;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 auto req = c.registry.setTagRequest();
                 req.setNamespace("team-a");
                 req.setName("m");
                 req.setTag("prod");
                 req.initVersionId(32);
                 req.send().wait(c.io.waitScope);
               })) {
    error = StatusFromException(*e, "tracker").ToString();
  }
  CHECK_THAT(error, Catch::Contains("not found: version"));
  // Nothing became visible.
  auto ls = RunProcess({CliBinary(), "ls", "team-a", "--tracker", tracker.rpc_address(), "--token",
                        tracker.MintToken("team-a", "read", "pod")});
  CHECK_THAT(ls.out, Catch::Contains("no models"));
}

TEST_CASE("retention keeps the newest versions and every tagged one", "[tracker][retention]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"), "--keep-versions", "2"});
  tracker.Start();
  std::string token = tracker.MintToken("team-a", "write", "trainer");
  auto shoal = [&](std::vector<std::string> args) {
    args.insert(args.begin(), CliBinary());
    return RunProcess(args, {"SHOAL_TRACKER=" + tracker.rpc_address(), "SHOAL_TOKEN=" + token,
                             "SHOAL_ORIGIN=file://" + (tmp / "origin")});
  };
  for (int i = 0; i < 4; ++i) {
    WriteRandomFile(tmp / "ckpt/w.bin", 5000, static_cast<unsigned>(i));
    std::vector<std::string> args = {"publish", tmp / "ckpt", "--name", "team-a/m", "--no-seed"};
    if (i == 0) args.insert(args.end(), {"--tag", "golden"});
    REQUIRE(shoal(args).exit_code == 0);
  }
  auto ls = shoal({"ls", "team-a/m"});
  REQUIRE(ls.exit_code == 0);
  CHECK(std::count(ls.out.begin(), ls.out.end(), '\n') == 1 + 3);  // header, 2 newest, golden
  CHECK_THAT(ls.out, Catch::Contains("golden"));
}

TEST_CASE(
    "asks for chunks outside the named version, too many at once, or in another namespace are "
    "refused",
    "[tracker][hostile][fetch]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker", {"--origin", "file://" + (tmp / "origin")});
  tracker.Start();
  std::string writer = tracker.MintToken("team-a", "write", "trainer");
  WriteRandomFile(tmp / "ckpt/w.bin", 5000, 1);
  auto pub = RunProcess(
      {CliBinary(), "publish", tmp / "ckpt", "--name", "team-a/m", "--tag", "latest", "--no-seed"},
      {"SHOAL_TRACKER=" + tracker.rpc_address(), "SHOAL_TOKEN=" + writer,
       "SHOAL_ORIGIN=file://" + (tmp / "origin")});
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);

  RawClient c(tracker.rpc_address(), tracker.MintToken("team-a", "read", "pod"));
  auto resolved = [&] {
    auto req = c.registry.resolveRequest();
    req.setNamespace("team-a");
    req.setName("m");
    req.setRef("latest");
    return req.send().wait(c.io.waitScope);
  }();
  std::string bytes(reinterpret_cast<const char*>(resolved.getSigned().getManifest().begin()),
                    resolved.getSigned().getManifest().size());
  auto manifest = DecodeManifest(bytes);
  REQUIRE(manifest.ok());
  std::vector<uint8_t> version(VersionId::kSize);
  VersionId vid = ComputeVersionId(bytes);
  std::memcpy(version.data(), vid.data(), version.size());
  ChunkId own = manifest->files[0].ChunkIds()[0];

  // The error a need call gets, or "" (and the queued count) on success.
  auto need = [&](const std::string& ns, std::vector<uint8_t> version_id, size_t chunks,
                  const ChunkId& chunk, uint32_t* queued = nullptr) {
    std::string error;
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                   auto req = c.registry.needRequest();
                   req.setNamespace(ns);
                   req.setName("m");
                   req.setVersionId(kj::arrayPtr(version_id.data(), version_id.size()));
                   auto list = req.initChunks(static_cast<unsigned>(chunks));
                   for (unsigned i = 0; i < chunks; ++i)
                     list.set(i, kj::arrayPtr(chunk.data(), ChunkId::kSize));
                   auto r = req.send().wait(c.io.waitScope);
                   if (queued != nullptr) *queued = r.getQueued();
                 })) {
      error = StatusFromException(*e, "tracker").ToString();
    }
    return error;
  };
  ChunkId foreign;
  foreign.mutable_data()[0] = 0xab;
  CHECK_THAT(need("team-a", version, 1, foreign), Catch::Contains("is not part of team-a/m"));
  CHECK_THAT(need("team-a", version, (1 << 16) + 1, own),
             Catch::Contains("ask for at most 65536 at a time"));
  CHECK_THAT(need("team-a", std::vector<uint8_t>(7, 1), 1, own),
             Catch::Contains("version id is not 32 bytes"));
  CHECK_THAT(need("team-a", std::vector<uint8_t>(VersionId::kSize, 0), 1, own),
             Catch::Contains("not found"));
  CHECK_THAT(need("team-b", version, 1, own), Catch::Contains("permission denied"));
  // The same ask, well formed, is queued (no agent is there to fetch it).
  uint32_t queued = 0;
  CHECK(need("team-a", version, 1, own, &queued).empty());
  CHECK(queued == 1);
  CHECK(tracker.Metric("shoal_tracker_need_chunks_total") == 1);
}

TEST_CASE(
    "a connection authenticated before its token is revoked is refused on its next call, "
    "and a revoked agent token cannot register",
    "[tracker][token][revocation]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker", {"--origin", "file://" + (tmp / "origin")});
  tracker.Start();
  const std::string admin = tracker.MintToken("*", "admin", "alice");
  const std::string agents = tracker.MintToken("*", "read", "agents");
  RawClient c(tracker.rpc_address(), tracker.MintToken("team-a", "read", "pod-7"));
  auto whoami = [&c]() -> std::string {
    KJ_IF_MAYBE (e, kj::runCatchingExceptions(
                        [&] { c.registry.whoamiRequest().send().wait(c.io.waitScope); })) {
      return StatusFromException(*e, "tracker").ToString();
    }
    return "";
  };
  REQUIRE(whoami() == "");

  const std::string http = "http://127.0.0.1:" + std::to_string(tracker.http_port());
  for (const char* subject : {"pod-7", "agents"}) {
    ProcessResult r = RunProcess({TrackerBinary(), "token", "revoke", "--subject", subject,
                                  "--tracker", http, "--token", admin});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const std::string refused = whoami();
  CHECK_THAT(refused, Catch::StartsWith("unauthenticated: token ") &&
                          Catch::Contains("for 'pod-7' was revoked at"));

  std::string registration;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 auto req = c.rpc->bootstrap().castAs<proto::Gateway>().registerAgentRequest();
                 req.setToken(agents);
                 req.initInfo().setName("node-1");
                 req.getInfo().setPeerPort(6881);
                 req.send().wait(c.io.waitScope);
               })) {
    registration = StatusFromException(*e, "tracker").ToString();
  }
  CHECK_THAT(registration, Catch::StartsWith("unauthenticated: agent registration") &&
                               Catch::Contains("for 'agents' was revoked at"));
}
