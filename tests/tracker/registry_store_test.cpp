// The registry over its key-value engine: guards, retries when two
// trackers write at once, and manifests kept in the origin's archive.
#include "registry/registry_store.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "kv/kv_store.h"
#include "kv/leveldb_kv.h"
#include "registry/manifest_archive.h"
#include "shoal/file_origin.h"
#include "shoal/manifest_codec.h"
#include "support/subprocess.h"
#include "tracker/registry_test_data.h"

namespace shoal::tracker {
namespace {

using testdata::By;
using testdata::CheckUnbroken;
using testdata::CommitVersions;
using testdata::MoveProdAtOnce;
using testdata::SharedKv;
using testdata::SomeManifest;
using testdata::Stored;

}  // namespace

TEST_CASE("a batch applies only when its guards hold", "[registry]") {
  shoal::testing::TempDir tmp;
  auto kv = LevelDbKv::Open(tmp / "kv").value();
  KvBatch first;
  first.ExpectAbsent("k");
  first.Put("k", "1");
  first.Put("other", "x");
  REQUIRE(kv->Apply(first).ok());

  KvBatch again;  // the same create: refused, and nothing of it lands
  again.ExpectAbsent("k");
  again.Put("k", "2");
  again.Delete("other");
  CHECK(kv->Apply(again).code() == Status::Code::kAlreadyExists);
  CHECK(*kv->Get("k").value() == "1");
  CHECK(kv->Get("other").value().has_value());

  KvBatch stale;
  stale.ExpectValue("k", "0");
  stale.Put("k", "3");
  CHECK(kv->Apply(stale).code() == Status::Code::kAlreadyExists);
  KvBatch fresh;
  fresh.ExpectValue("k", "1");
  fresh.Put("k", "3");
  REQUIRE(kv->Apply(fresh).ok());
  CHECK(*kv->Get("k").value() == "3");

  for (int i = 0; i < 2500; ++i) {
    KvBatch b;
    b.Put("p|" + std::to_string(100000 + i), std::to_string(i));
    REQUIRE(kv->Apply(b).ok());
  }
  int seen = 0;
  REQUIRE(VisitPrefix(
              *kv, "p|",
              [&](const KvPair& p) {
                CHECK(p.value == std::to_string(seen));
                ++seen;
                return true;
              },
              700)
              .ok());
  CHECK(seen == 2500);
  auto last = kv->Scan("p|", PrefixEnd("p|"), 2, /*reverse=*/true).value();
  REQUIRE(last.size() == 2);
  CHECK(last[0].key == "p|102499");
  CHECK(last[1].key == "p|102498");
}

TEST_CASE("two trackers moving one tag at once keep one unbroken history", "[registry]") {
  shoal::testing::TempDir tmp;
  auto engine = LevelDbKv::Open(tmp / "kv").value();
  RegistryStore a(std::make_unique<SharedKv>(*engine, SIZE_MAX), nullptr);
  RegistryStore b(std::make_unique<SharedKv>(*engine, SIZE_MAX), nullptr);
  std::vector<VersionId> ids = CommitVersions(a, 4, 1);
  // Each tracker moves "prod" 40 times, concurrently.
  MoveProdAtOnce(a, b, ids, 40);
  auto history = b.TagHistory("team-a", "llama", "prod").value();
  REQUIRE(history.size() == 80);
  CHECK(!history[0].from.has_value());
  CheckUnbroken(history);
  CHECK(*a.GetTag("team-a", "llama", "prod").value() == *history.back().to);
  // 4 commits and 80 moves, each audited once, numbered without gaps.
  auto log = a.AuditLog(0, 1000).value();
  REQUIRE(log.size() == 84);
  for (size_t i = 0; i < log.size(); ++i) CHECK(log[i].seq == i + 1);
}

TEST_CASE("a manifest too big for the engine lives in the origin's archive", "[registry]") {
  shoal::testing::TempDir tmp;
  std::filesystem::create_directories(tmp / "origin");
  auto origin = NewFileOrigin(tmp / "origin").value();
  ManifestArchive archive(*origin);
  auto engine = LevelDbKv::Open(tmp / "kv").value();
  RegistryStore store(std::make_unique<SharedKv>(*engine, 512), &archive);

  Manifest small = SomeManifest(1, 1000), big = SomeManifest(200, 2000);
  StoredVersion vs = Stored(small), vb = Stored(big);
  REQUIRE(vb.manifest_bytes.size() > 512);
  REQUIRE(store.CommitVersion(small, vs, {"latest"}, By("ci")).value());
  REQUIRE(store.CommitVersion(big, vb, {"latest"}, By("ci")).value());
  // Committing the same bytes again changes nothing.
  CHECK_FALSE(store.CommitVersion(big, vb, {"latest"}, By("ci")).value());

  // Both are archived; the big one's registry record holds no manifest.
  for (const StoredVersion* v : {&vs, &vb}) {
    CHECK(std::filesystem::exists(tmp /
                                  ("origin/" + ManifestArchive::KeyOf("team-a", "llama", v->id))));
  }
  auto record = engine->Get("V|team-a|llama|" + vb.id.ToHex()).value();
  REQUIRE(record.has_value());
  CHECK(record->size() < 512);

  // Read through a fresh archive (another tracker, a cold cache).
  ManifestArchive cold(*origin);
  RegistryStore other(std::make_unique<SharedKv>(*engine, 512), &cold);
  auto got = other.GetVersion("team-a", "llama", vb.id).value();
  CHECK(got.manifest_bytes == vb.manifest_bytes);
  CHECK(got.signature == vb.signature);
  size_t manifests = 0;
  REQUIRE(other.ForEachManifest([&](const VersionId&, const Manifest&) { ++manifests; }).ok());
  CHECK(manifests == 2);

  // A damaged copy is refused by name, never served.
  const std::string path = tmp / ("origin/" + ManifestArchive::KeyOf("team-a", "llama", vb.id));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  ManifestArchive cold2(*origin);
  RegistryStore third(std::make_unique<SharedKv>(*engine, 512), &cold2);
  Result<StoredVersion> damaged = third.GetVersion("team-a", "llama", vb.id);
  REQUIRE_FALSE(damaged.ok());
  CHECK(damaged.status().IsCorruption());
  CHECK_THAT(damaged.status().message(), Catch::Contains(vb.id.ToHex()));

  // Deleting the version removes its copy too.
  REQUIRE(store.DeleteVersion("team-a", "llama", vs.id, By("admin")).ok());
  CHECK_FALSE(std::filesystem::exists(
      tmp / ("origin/" + ManifestArchive::KeyOf("team-a", "llama", vs.id))));
  CHECK(store.GetVersion("team-a", "llama", vs.id).status().IsNotFound());
}

TEST_CASE("versions are listed by label, newest first, a page at a time", "[registry]") {
  shoal::testing::TempDir tmp;
  RegistryStore store(LevelDbKv::Open(tmp / "kv").value(), nullptr);
  // Versions of run 1 and run 2, epochs 1 to 3, interleaved in time; one
  // version carries no label.
  std::vector<std::pair<VersionId, std::string>> committed;
  for (int i = 0; i < 7; ++i) {
    Manifest m = SomeManifest(1, 1000 + i);
    if (i < 6) {
      m.labels.push_back({"epoch", std::to_string(i / 2 + 1)});
      m.labels.push_back({"run", std::to_string(i % 2 + 1)});
    }
    m.Canonicalize();
    StoredVersion v = Stored(m);
    REQUIRE(store.CommitVersion(m, v, {}, By("ci")).value());
    committed.emplace_back(v.id, i < 6 ? "run=" + std::to_string(i % 2 + 1) : "");
  }
  std::string next;
  auto run1 = store.ListVersions("team-a", "llama", "", 100, &next, {"run=1"}).value();
  REQUIRE(run1.size() == 3);
  CHECK(next.empty());
  // Newest first: epochs 3, 2, 1 of run 1 (commits 4, 2, 0).
  CHECK(run1[0].id == committed[4].first);
  CHECK(run1[1].id == committed[2].first);
  CHECK(run1[2].id == committed[0].first);
  CHECK(run1[0].labels == std::vector<std::string>{"epoch=3", "run=1"});
  // Every label must match.
  auto one = store.ListVersions("team-a", "llama", "", 100, &next, {"run=2", "epoch=2"}).value();
  REQUIRE(one.size() == 1);
  CHECK(one[0].id == committed[3].first);
  CHECK(store.ListVersions("team-a", "llama", "", 100, &next, {"run=3"}).value().empty());
  // Pages of one skip the versions without the label between them.
  std::vector<VersionId> paged;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    auto got = store.ListVersions("team-a", "llama", after, 1, &next, {"run=1"}).value();
    for (const VersionInfo& v : got) paged.push_back(v.id);
    if (next.empty()) break;
    after = next;
  }
  CHECK(paged ==
        std::vector<VersionId>{committed[4].first, committed[2].first, committed[0].first});
  // No filter: all seven, the unlabelled one first.
  auto all = store.ListVersions("team-a", "llama", "", 100, &next).value();
  REQUIRE(all.size() == 7);
  CHECK(all[0].labels.empty());
  CHECK(CheckLabelFilter({"run"}).code() == Status::Code::kInvalidArgument);
  CHECK(CheckLabelFilter({"=1"}).code() == Status::Code::kInvalidArgument);
  CHECK(CheckLabelFilter({"run=1", "a=b=c"}).ok());
}

}  // namespace shoal::tracker
