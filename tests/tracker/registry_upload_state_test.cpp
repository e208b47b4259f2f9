// Versions committed before every chunk is in the origin: the U| records
// that hold their upload's state and their tags until they are durable.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_store.h"
#include "kv/leveldb_kv.h"
#include "registry/registry_store.h"
#include "shoal/utc_time.h"
#include "support/subprocess.h"
#include "tracker/registry_test_data.h"

namespace shoal::tracker {
namespace {

using testdata::By;
using testdata::SharedKv;
using testdata::SomeManifest;
using testdata::Stored;

constexpr int64_t kMinute = 60 * 1000;

// A registry on LevelDB, with the engine at hand to count its keys.
struct Registry {
  shoal::testing::TempDir tmp;
  std::unique_ptr<LevelDbKv> engine = LevelDbKv::Open(tmp / "kv").value();
  RegistryStore store{std::make_unique<SharedKv>(*engine, SIZE_MAX), nullptr};

  size_t UploadRecords() {
    size_t n = 0;
    REQUIRE(VisitPrefix(*engine, "U|", [&](const KvPair&) {
              ++n;
              return true;
            }).ok());
    return n;
  }
  std::optional<VersionId> Tag(const std::string& tag) {
    return store.GetTag("team-a", "llama", tag).value();
  }
  std::vector<TagChange> History(const std::string& tag) {
    return store.TagHistory("team-a", "llama", tag).value();
  }
  VersionUpload Upload(const VersionId& id, int64_t now_ms) {
    return store.UploadOf("team-a", "llama", id, now_ms).value();
  }
};

}  // namespace

TEST_CASE("a pending commit holds its tags until its upload finishes, then moves them",
          "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(2, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  CommitOutcome out =
      r.store.CommitPending(m, v, {"prod", "latest", "prod"}, By("ci"), false, now + kMinute)
          .value();
  CHECK(out.created);
  CHECK(out.state == VersionState::kUploading);
  CHECK(r.store.GetVersion("team-a", "llama", v.id).ok());  // pullable meanwhile
  CHECK_FALSE(r.Tag("prod"));
  CHECK_FALSE(r.Tag("latest"));
  VersionUpload up = r.Upload(v.id, now);
  CHECK(up.state == VersionState::kUploading);
  CHECK(up.held_tags == std::vector<std::string>{"latest", "prod"});
  CHECK(up.publisher == "ci");
  std::string next;
  auto listed = r.store.ListVersions("team-a", "llama", "", 10, &next).value();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].state == VersionState::kUploading);
  CHECK_THAT(listed[0].state_detail, Catch::Contains("by ci since"));
  CHECK(listed[0].tags.empty());

  CHECK(r.store.FinishUpload("team-a", "llama", v.id, now, By("trainer")).value() ==
        VersionState::kDurable);
  CHECK(r.Tag("prod") == v.id);
  CHECK(r.Tag("latest") == v.id);
  auto history = r.History("prod");
  REQUIRE(history.size() == 1);
  CHECK_FALSE(history[0].from.has_value());
  CHECK(history[0].to == v.id);
  CHECK(history[0].by == "trainer");
  CHECK(r.Upload(v.id, now).state == VersionState::kDurable);
  CHECK(r.UploadRecords() == 0);
  listed = r.store.ListVersions("team-a", "llama", "", 10, &next).value();
  CHECK(listed[0].state == VersionState::kDurable);
  CHECK(listed[0].state_detail.empty());

  // Finishing again changes nothing: still durable, one move of each tag.
  CHECK(r.store.FinishUpload("team-a", "llama", v.id, now, By("trainer")).value() ==
        VersionState::kDurable);
  CHECK(r.History("prod").size() == 1);
  auto models = r.store.ListModels("team-a", "", 10, &next).value();
  REQUIRE(models.size() == 1);
  CHECK(models[0].latest == v.id);
  CHECK(models[0].latest_at_ms == 1000);
  CHECK(models[0].version_count == 1);
}

TEST_CASE("a pending commit with tag-early moves its tags at once", "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(1, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  CHECK(r.store.CommitPending(m, v, {"prod"}, By("ci"), true, now + kMinute).value().state ==
        VersionState::kUploading);
  CHECK(r.Tag("prod") == v.id);
  CHECK(r.Upload(v.id, now).held_tags.empty());
  REQUIRE(r.store.FinishUpload("team-a", "llama", v.id, now, By("ci")).ok());
  CHECK(r.History("prod").size() == 1);
}

TEST_CASE("renewing keeps an upload alive past its first lease", "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(1, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  REQUIRE(r.store.CommitPending(m, v, {}, By("ci"), false, now + kMinute).ok());
  CHECK(r.store.RenewUpload("team-a", "llama", v.id, now + 30000, now + 30000 + kMinute).value() ==
        VersionState::kUploading);
  CHECK(r.Upload(v.id, now + kMinute + 1).state == VersionState::kUploading);
  CHECK(r.Upload(v.id, now + 30000 + kMinute + 1).state == VersionState::kFailed);

  // A durable version has nothing to renew; an unknown one is not found.
  REQUIRE(r.store.FinishUpload("team-a", "llama", v.id, now, By("ci")).ok());
  CHECK(r.store.RenewUpload("team-a", "llama", v.id, now, now + kMinute).value() ==
        VersionState::kDurable);
  StoredVersion unknown = Stored(SomeManifest(1, 2000));
  CHECK(r.store.RenewUpload("team-a", "llama", unknown.id, now, now + kMinute).status().code() ==
        Status::Code::kNotFound);
}

TEST_CASE("an upload whose lease lapsed reads as failed and can be neither renewed nor finished",
          "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(1, 1000);
  StoredVersion v = Stored(m);
  const int64_t lapsed_at = NowMs() - 1;
  REQUIRE(r.store.CommitPending(m, v, {"prod"}, By("ci"), false, lapsed_at).ok());
  CHECK(r.Upload(v.id, lapsed_at).state == VersionState::kUploading);
  VersionUpload failed = r.Upload(v.id, lapsed_at + 1);
  CHECK(failed.state == VersionState::kFailed);
  CHECK(failed.detail == "its publisher (ci) stopped renewing the upload; it lapsed at " +
                             FormatUtcMillis(lapsed_at));
  std::string next;
  auto listed = r.store.ListVersions("team-a", "llama", "", 10, &next).value();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].state == VersionState::kFailed);
  CHECK(listed[0].state_detail == failed.detail);

  const int64_t now = NowMs();
  for (const Status& s : {r.store.RenewUpload("team-a", "llama", v.id, now, now + kMinute).status(),
                          r.store.FinishUpload("team-a", "llama", v.id, now, By("ci")).status()}) {
    CHECK(s.code() == Status::Code::kFailedPrecondition);
    CHECK(s.message() == "team-a/llama:" + v.id.ShortHex() + " failed before it was durable: " +
                             failed.detail + "; publish it again");
  }
  CHECK_FALSE(r.Tag("prod"));
  CHECK(r.UploadRecords() == 1);
}

TEST_CASE("a failure its publisher reports fails the version, and a durable version cannot fail",
          "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(1, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  REQUIRE(r.store.CommitPending(m, v, {"prod"}, By("ci"), false, now + kMinute).ok());
  CHECK(
      r.store.FailUpload("team-a", "llama", v.id, "PUT chunk 3fa2: disk full", By("ci")).value() ==
      VersionState::kFailed);
  CHECK(r.Upload(v.id, now).detail == "PUT chunk 3fa2: disk full");
  Status finish = r.store.FinishUpload("team-a", "llama", v.id, now, By("ci")).status();
  CHECK_THAT(finish.message(), Catch::Contains("failed before it was durable: PUT chunk 3fa2"));
  CHECK_FALSE(r.Tag("prod"));

  Manifest other = SomeManifest(1, 2000);
  StoredVersion durable = Stored(other);
  REQUIRE(r.store.CommitVersion(other, durable, {}, By("ci")).value());
  CHECK(r.store.FailUpload("team-a", "llama", durable.id, "late", By("ci")).value() ==
        VersionState::kDurable);
  CHECK(r.Upload(durable.id, now).state == VersionState::kDurable);
}

TEST_CASE("a second pending commit takes over a failed upload with its own tags",
          "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(1, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  REQUIRE(r.store.CommitPending(m, v, {"first"}, By("ci"), false, now - 1).ok());
  REQUIRE(r.Upload(v.id, now).state == VersionState::kFailed);

  CommitOutcome again =
      r.store.CommitPending(m, v, {"second"}, By("trainer"), false, now + kMinute).value();
  CHECK_FALSE(again.created);
  CHECK(again.state == VersionState::kUploading);
  VersionUpload up = r.Upload(v.id, now);
  CHECK(up.state == VersionState::kUploading);
  CHECK(up.held_tags == std::vector<std::string>{"second"});
  CHECK(up.publisher == "trainer");
  REQUIRE(r.store.FinishUpload("team-a", "llama", v.id, now, By("trainer")).ok());
  CHECK(r.Tag("second") == v.id);
  CHECK_FALSE(r.Tag("first"));

  // A pending commit of a version durable already moves its tags at once.
  CommitOutcome durable =
      r.store.CommitPending(m, v, {"third"}, By("ci"), false, now + kMinute).value();
  CHECK_FALSE(durable.created);
  CHECK(durable.state == VersionState::kDurable);
  CHECK(r.Tag("third") == v.id);
  CHECK(r.UploadRecords() == 0);
}

TEST_CASE("a commit that found every chunk in the origin makes an uploading version durable",
          "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(1, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  REQUIRE(r.store.CommitPending(m, v, {"prod"}, By("ci"), false, now + kMinute).ok());
  CHECK_FALSE(r.store.CommitVersion(m, v, {"latest"}, By("ci")).value());  // it existed
  CHECK(r.Tag("prod") == v.id);
  CHECK(r.Tag("latest") == v.id);
  CHECK(r.History("prod").size() == 1);
  CHECK(r.Upload(v.id, now).state == VersionState::kDurable);
  CHECK(r.UploadRecords() == 0);
}

TEST_CASE("deleting an uploading version deletes its upload record with it", "[registry][upload]") {
  Registry r;
  Manifest m = SomeManifest(1, 1000);
  StoredVersion v = Stored(m);
  const int64_t now = NowMs();
  REQUIRE(r.store.CommitPending(m, v, {"prod"}, By("ci"), false, now + kMinute).ok());
  REQUIRE(r.UploadRecords() == 1);
  REQUIRE(r.store.DeleteVersion("team-a", "llama", v.id, By("root")).ok());
  CHECK(r.UploadRecords() == 0);
  CHECK(r.store.FinishUpload("team-a", "llama", v.id, now, By("ci")).status().code() ==
        Status::Code::kNotFound);
  CHECK(r.store.RenewUpload("team-a", "llama", v.id, now, now + kMinute).status().code() ==
        Status::Code::kNotFound);
  CHECK_FALSE(r.Tag("prod"));
}

}  // namespace shoal::tracker
