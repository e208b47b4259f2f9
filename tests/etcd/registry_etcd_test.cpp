// The registry on etcd, as a fleet of trackers shares it: two stores
// writing one tag at once, big manifests kept in the origin, and commits
// that go on while the etcd leader is killed under them.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <thread>

#include "etcd/etcd_test_env.h"
#include "kv/etcd_kv.h"
#include "registry/manifest_archive.h"
#include "registry/registry_store.h"
#include "shoal/file_origin.h"
#include "shoal/manifest_codec.h"
#include "shoal/utc_time.h"
#include "support/env_file.h"
#include "support/subprocess.h"
#include "tracker/registry_test_data.h"

namespace shoal::tracker {
namespace {

using testdata::By;
using testdata::CheckUnbroken;
using testdata::CommitVersions;
using testdata::MoveProdAtOnce;
using testdata::SomeManifest;
using testdata::Stored;

}  // namespace

TEST_CASE("registry location URLs", "[etcd][registry]") {
  CHECK_FALSE(RegistryLocation::Parse("").value().etcd);
  auto one = RegistryLocation::Parse("etcd://10.0.0.1:2379").value();
  CHECK(one.etcd);
  CHECK(one.etcd_options.endpoints == std::vector<std::string>{"http://10.0.0.1:2379"});
  CHECK(one.key_prefix == "shoal/");
  auto three = RegistryLocation::Parse("etcd+https://a:1,b:2,c:3/prod/shoal").value();
  CHECK(three.etcd_options.endpoints ==
        std::vector<std::string>{"https://a:1", "https://b:2", "https://c:3"});
  CHECK(three.key_prefix == "prod/shoal/");
  for (const char* bad : {"http://a:1", "etcd://", "etcd://a", "etcd://a:1,,b:2"}) {
    INFO(bad);
    auto r = RegistryLocation::Parse(bad);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("--registry"));
  }
}

TEST_CASE("two trackers on etcd moving one tag keep one unbroken history", "[etcd][registry]") {
  const std::string prefix = shoal_test::FreshPrefix("registry-tags");
  RegistryStore a(shoal_test::OpenEtcdKv(prefix), nullptr),
      b(shoal_test::OpenEtcdKv(prefix), nullptr);
  std::vector<VersionId> ids = CommitVersions(a, 3, 2);
  // Seen through the other store at once: one registry.
  CHECK(b.GetVersion("team-a", "llama", ids[2]).ok());
  MoveProdAtOnce(a, b, ids, 15);
  auto history = a.TagHistory("team-a", "llama", "prod").value();
  REQUIRE(history.size() == 30);
  CheckUnbroken(history);
  auto log = b.AuditLog(0, 1000).value();
  REQUIRE(log.size() == 33);
  for (size_t i = 0; i < log.size(); ++i) CHECK(log[i].seq == i + 1);
  auto feed = b.FeedAfter(0, 100).value();
  REQUIRE(feed.size() == 3);
  CHECK(feed[2].id == ids[2]);
  CHECK(b.FeedEnd().value() == 3);
}

TEST_CASE("a manifest too big for etcd is kept in the origin and read by another tracker",
          "[etcd][registry]") {
  shoal::testing::TempDir tmp;
  std::filesystem::create_directories(tmp / "origin");
  auto origin = NewFileOrigin(tmp / "origin").value();
  ManifestArchive archive(*origin), other_archive(*origin);
  const std::string prefix = shoal_test::FreshPrefix("registry-big");
  RegistryStore a(shoal_test::OpenEtcdKv(prefix), &archive),
      b(shoal_test::OpenEtcdKv(prefix), &other_archive);
  Manifest big = SomeManifest(9000, 5000);  // ~600 KiB of manifest
  StoredVersion v = Stored(big);
  REQUIRE(v.manifest_bytes.size() > 512 * 1024);
  REQUIRE(a.CommitVersion(big, v, {"latest"}, By("ci")).value());
  auto got = b.GetVersion("team-a", "llama", v.id).value();
  CHECK(got.manifest_bytes == v.manifest_bytes);
  CHECK(*b.GetTag("team-a", "llama", "latest").value() == v.id);
}

TEST_CASE("a version committed through one tracker before its upload is finished through another",
          "[etcd][registry][upload]") {
  const std::string prefix = shoal_test::FreshPrefix("registry-upload");
  RegistryStore a(shoal_test::OpenEtcdKv(prefix), nullptr),
      b(shoal_test::OpenEtcdKv(prefix), nullptr);
  Manifest m = SomeManifest(2, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  REQUIRE(a.CommitPending(m, v, {"prod"}, By("ci"), false, now + 60000).value().state ==
          VersionState::kUploading);
  CHECK(b.UploadOf("team-a", "llama", v.id, now).value().state == VersionState::kUploading);
  CHECK_FALSE(b.GetTag("team-a", "llama", "prod").value());
  CHECK(b.RenewUpload("team-a", "llama", v.id, now, now + 120000).value() ==
        VersionState::kUploading);
  CHECK(a.UploadOf("team-a", "llama", v.id, now + 90000).value().state == VersionState::kUploading);
  CHECK(b.FinishUpload("team-a", "llama", v.id, now, By("ci")).value() == VersionState::kDurable);
  CHECK(*a.GetTag("team-a", "llama", "prod").value() == v.id);
  CHECK(a.TagHistory("team-a", "llama", "prod").value().size() == 1);
  std::string next;
  CHECK(a.ListVersions("team-a", "llama", "", 10, &next).value().at(0).state ==
        VersionState::kDurable);

  // A lapsed one reads as failed through either, and a delete clears it.
  Manifest lapsing = SomeManifest(1, 2000);
  StoredVersion w = Stored(lapsing);
  REQUIRE(a.CommitPending(lapsing, w, {}, By("ci"), false, now - 1).ok());
  CHECK(b.RenewUpload("team-a", "llama", w.id, now, now + 60000).status().code() ==
        Status::Code::kFailedPrecondition);
  REQUIRE(b.DeleteVersion("team-a", "llama", w.id, By("root")).ok());
  CHECK(a.UploadOf("team-a", "llama", w.id, now).value().state == VersionState::kDurable);
  CHECK(a.RenewUpload("team-a", "llama", w.id, now, now + 60000).status().code() ==
        Status::Code::kNotFound);
}

TEST_CASE("commits go on while the etcd leader is killed, and none is half visible",
          "[etcd][registry]") {
  const std::string prefix = shoal_test::FreshPrefix("registry-leader");
  RegistryStore store(shoal_test::OpenEtcdKv(prefix), nullptr);
  std::atomic<bool> stop{false};
  std::vector<std::pair<VersionId, Status>> outcomes;
  std::thread writer([&] {
    for (int i = 0; !stop && i < 400; ++i) {
      Manifest m = SomeManifest(3, 100000 + i);
      StoredVersion v = Stored(m);
      Result<bool> r = store.CommitVersion(m, v, {"latest"}, By("ci"));
      outcomes.emplace_back(v.id, r.status());
      if (!r.ok()) {  // the rerun completes
        Result<bool> again = store.CommitVersion(m, v, {"latest"}, By("ci"));
        outcomes.emplace_back(v.id, again.status());
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string leader = shoal_test::EtcdControl("leader");
  shoal_test::EtcdControl("kill", leader);
  std::this_thread::sleep_for(std::chrono::seconds(4));
  stop = true;
  writer.join();
  shoal_test::EtcdControl("restart", leader);

  size_t failed = 0;
  for (const auto& [id, s] : outcomes) {
    if (s.ok()) continue;
    ++failed;
    INFO(s.message());
    CHECK(s.message().find('\n') == std::string::npos);  // one line
    CHECK(s.IsUnavailable());
  }
  INFO(outcomes.size() << " commits, " << failed << " failed");
  REQUIRE(outcomes.size() > 20);  // writes resumed after the election
  CHECK(outcomes.back().second.ok());
  // Every version is whole: record, summary and feed entry together, each
  // audited once; and every version committed OK is there.
  std::string next;
  auto versions = store.ListVersions("team-a", "llama", "", 1000, &next).value();
  std::set<VersionId> listed;
  for (const auto& v : versions) {
    listed.insert(v.id);
    CHECK(store.GetVersion("team-a", "llama", v.id).ok());
  }
  for (const auto& [id, s] : outcomes) {
    if (s.ok()) CHECK(listed.count(id) == 1);
  }
  auto feed = store.FeedAfter(0, 1000).value();
  CHECK(feed.size() == listed.size());
  auto log = store.AuditLog(0, 2000).value();
  CHECK(log.size() >= listed.size());  // a rerun of a commit is audited too
}

}  // namespace shoal::tracker
