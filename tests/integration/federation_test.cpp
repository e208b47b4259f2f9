// Federation: a tracker that follows another cluster's namespaces
// (shoal-tracker serve --follow). Two clusters on loopback, each with its
// tracker, two agents and its own prefix of the tests' radosgw bucket as its
// origin. What a user checks: a version published upstream appears in the
// mirror with its tag once every chunk is in the mirror's origin, and pulls
// there give the same bytes; a second version copies only its new chunks;
// the mirror refuses publishes to what it mirrors; a chunk whose bytes
// upstream are not its ID is refused and reported, and copied once it is
// right again; a mirror killed mid-copy resumes without copying again; and
// an upstream stopped and started again is followed again.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "../s3/s3_test_env.h"
#include "shoal/origin.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMiB = 1u << 20;

shoal::OriginOptions FreshOrigin(const std::string& what) {
  return shoal_test::TestOptions(what + "-" + std::to_string(std::random_device{}() % 1000000000));
}

ClusterOptions OnS3(const shoal::OriginOptions& s3, std::vector<std::string> tracker_flags = {}) {
  ClusterOptions o;
  o.origin = {s3.url, s3.endpoint, s3.region, s3.access_key, s3.secret_key};
  o.agents = 2;
  o.agents_use_origin = true;
  o.tracker_flags.insert(o.tracker_flags.end(), tracker_flags.begin(), tracker_flags.end());
  return o;
}

// The flags that make a tracker mirror team-a of `up`, whose origin is
// `up_s3`; the token file is written into `dir`.
std::vector<std::string> FollowFlags(const TestCluster& up, const shoal::OriginOptions& up_s3,
                                     const std::string& dir, std::vector<std::string> more = {}) {
  const std::string token_file = dir + "/upstream-token";
  std::ofstream(token_file) << up.reader << "\n";
  ::chmod(token_file.c_str(), 0600);
  std::vector<std::string> flags = {"--follow",
                                    up.tracker.rpc_address(),
                                    "--follow-ns",
                                    "team-a",
                                    "--follow-token-file",
                                    token_file,
                                    "--follow-origin",
                                    up_s3.url,
                                    "--follow-s3-endpoint",
                                    up_s3.endpoint,
                                    "--follow-s3-region",
                                    up_s3.region,
                                    "--follow-wait",
                                    "1s"};
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

double Copied(const TestCluster& c) {
  return c.tracker.Metric("shoal_tracker_follow_chunks_total{result=\"copied\"}");
}

// Waits up to `seconds` for `done`; false if it never held.
bool WaitUntil(const std::function<bool()>& done, int seconds = 60) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// `shoal inspect ref` in `c` as its reader: the output if it resolves, "" if not.
std::string Inspect(const TestCluster& c, const std::string& ref) {
  ProcessResult r = c.Shoal(c.reader, {"inspect", ref});
  return r.exit_code == 0 ? r.out : std::string();
}

// Publishes `dir` as `name` in `up`, unseeded; the version ID it printed.
// The test fails unless it worked.
std::string PublishUpstream(const TestCluster& up, const std::string& dir,
                            const std::string& name) {
  ProcessResult r = up.Publish(dir, name, -1);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::string id = PublishedVersionId(r);
  REQUIRE(id.size() == 64);
  return id;
}

// Waits until `ref` resolves in `c` to version `id`; false if it never did.
bool WaitForVersion(const TestCluster& c, const std::string& ref, const std::string& id) {
  return WaitUntil([&] { return Inspect(c, ref).find(id.substr(0, 12)) != std::string::npos; });
}

void Pulls(const TestCluster& c, const std::string& ref, const std::string& src) {
  const std::string out = c.tmp.path() + "/pulled-" + std::to_string(std::random_device{}());
  pid_t pull = c.StartPull(1, ref, out);
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(src, out));
}

}  // namespace

TEST_CASE("a mirror follows publishes and tags, copies only new chunks and refuses publishes",
          "[federation][s3]") {
  const shoal::OriginOptions up_s3 = FreshOrigin("federation-up");
  TestCluster up(OnS3(up_s3));
  TempDir secrets;
  const shoal::OriginOptions mirror_s3 = FreshOrigin("federation-mirror");
  TestCluster mirror(OnS3(mirror_s3, FollowFlags(up, up_s3, secrets.path(), {"--follow-warm"})));
  REQUIRE(WaitUntil([&] { return mirror.tracker.Metric("shoal_tracker_follow_connected") == 1; }));

  // Version 1: 8 chunks of 1 MiB in two files, and a small config.
  const std::string v1 = up.tmp.path() + "/v1";
  WriteRandomFile(v1 + "/model-00001-of-00002.safetensors", 4 * kMiB, 1);
  WriteRandomFile(v1 + "/model-00002-of-00002.safetensors", 3 * kMiB, 2);
  WriteRandomFile(v1 + "/config.json", 700, 3);
  const std::string id1 = PublishUpstream(up, v1, "team-a/llama");
  const auto published = std::chrono::steady_clock::now();
  const bool landed = WaitForVersion(mirror, "team-a/llama:latest", id1);
  INFO(mirror.tracker.log());
  REQUIRE(landed);
  INFO("upstream publish to mirror tag: "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - published).count()
       << " s");
  CHECK(Copied(mirror) == 8);
  // By the time the tag resolves, every chunk is in the mirror's own bucket.
  auto mirror_bucket = shoal_test::OpenTestS3(mirror_s3);
  auto listed = mirror_bucket->List("chunks/", "", 100);
  REQUIRE(listed.ok());
  CHECK(listed->objects.size() == 8);
  // Both signatures: the mirror's, and the upstream's kept beside it.
  const std::string shown = Inspect(mirror, "team-a/llama:latest");
  CHECK_THAT(shown, Catch::Contains("mirrored from " + up.tracker.rpc_address()));
  // Warmed (--follow-warm): each chunk's owner fetched it from the mirror's
  // origin, so the first pull there reads no origin at all.
  REQUIRE(WaitUntil([&] { return mirror.OriginBytes() >= 7.0 * kMiB + 700; }));
  const double warmed = mirror.OriginBytes();
  Pulls(mirror, "team-a/llama:latest", v1);
  CHECK(mirror.OriginBytes() == warmed);

  // Version 2 changes one file: only its 3 chunks move.
  const std::string v2 = up.tmp.path() + "/v2";
  fs::copy(v1, v2, fs::copy_options::recursive);
  WriteRandomFile(v2 + "/model-00002-of-00002.safetensors", 3 * kMiB, 22);
  const std::string id2 = PublishUpstream(up, v2, "team-a/llama");
  REQUIRE(WaitForVersion(mirror, "team-a/llama:latest", id2));
  CHECK(Copied(mirror) == 8 + 3);
  CHECK(mirror.tracker.Metric("shoal_tracker_follow_chunks_total{result=\"present\"}") == 5);
  Pulls(mirror, "team-a/llama:latest", v2);
  // The earlier version, still tagged nowhere but pulled by its ID.
  CHECK(!Inspect(mirror, "team-a/llama:" + id1.substr(0, 16)).empty());

  // A tag moved upstream moves here.
  ProcessResult tag = up.Shoal(up.writer, {"tag", "team-a/llama:" + id1.substr(0, 16), "prod"});
  INFO(tag.out << tag.err);
  REQUIRE(tag.exit_code == 0);
  REQUIRE(WaitForVersion(mirror, "team-a/llama:prod", id1));

  // The mirror takes no publish to what it mirrors.
  ProcessResult refused = mirror.Publish(v1, "team-a/other", -1);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("read-only mirror"));

  // The upstream stops and comes back: the mirror follows it again.
  up.tracker.Stop();
  REQUIRE(WaitUntil([&] { return mirror.tracker.Metric("shoal_tracker_follow_connected") == 0; }));
  up.tracker.Start();
  const std::string v3 = up.tmp.path() + "/v3";
  WriteRandomFile(v3 + "/adapter.safetensors", 2 * kMiB, 33);
  const std::string id3 = PublishUpstream(up, v3, "team-a/adapter");
  REQUIRE(WaitForVersion(mirror, "team-a/adapter:latest", id3));
  Pulls(mirror, "team-a/adapter:latest", v3);
}

TEST_CASE("a chunk upstream that is not its ID is refused and reported, then copied once right",
          "[federation][s3]") {
  const shoal::OriginOptions up_s3 = FreshOrigin("federation-up");
  TestCluster up(OnS3(up_s3));
  const std::string v1 = up.tmp.path() + "/v1";
  WriteRandomFile(v1 + "/model.safetensors", 4 * kMiB, 4);
  const std::string id = PublishUpstream(up, v1, "team-a/llama");

  // One chunk in the upstream's origin gets other bytes of its size.
  auto bucket = shoal_test::OpenTestS3(up_s3);
  auto page = bucket->List("chunks/", "", 10);
  REQUIRE(page.ok());
  REQUIRE(!page->objects.empty());
  const std::string key = page->objects[0].key;
  shoal::StringSink original;
  REQUIRE(bucket->Get(key, 0, shoal::Origin::kToEnd, original).ok());
  std::string flipped = original.str();
  flipped[flipped.size() / 2] ^= 0x01;
  REQUIRE(bucket->Put(key, reinterpret_cast<const uint8_t*>(flipped.data()), flipped.size()).ok());

  TempDir secrets;
  TestCluster mirror(
      OnS3(FreshOrigin("federation-mirror"), FollowFlags(up, up_s3, secrets.path())));
  REQUIRE(WaitUntil([&] {
    return mirror.tracker.Metric("shoal_tracker_follow_chunks_total{result=\"refused\"}") >= 1;
  }));
  CHECK(mirror.tracker.Metric("shoal_tracker_follow_errors_total") >= 1);
  CHECK_THAT(mirror.tracker.log(), Catch::Contains("do not hash to its ID"));
  // Nothing is committed while a chunk is wrong: the tag does not resolve.
  CHECK(Inspect(mirror, "team-a/llama:latest").empty());

  // Put right, the chunk is copied on the mirror's next try.
  REQUIRE(
      bucket
          ->Put(key, reinterpret_cast<const uint8_t*>(original.str().data()), original.str().size())
          .ok());
  REQUIRE(WaitForVersion(mirror, "team-a/llama:latest", id));
  Pulls(mirror, "team-a/llama:latest", v1);
}

TEST_CASE("a mirror killed mid-copy resumes without copying again", "[federation][s3]") {
  const shoal::OriginOptions up_s3 = FreshOrigin("federation-up");
  TestCluster up(OnS3(up_s3));
  const std::string v1 = up.tmp.path() + "/v1";
  WriteRandomFile(v1 + "/model.safetensors", 24 * kMiB, 5);
  const std::string id = PublishUpstream(up, v1, "team-a/llama");

  // 4 MiB a second: the 24 chunks take about 6 s.
  TempDir secrets;
  TestCluster mirror(OnS3(FreshOrigin("federation-mirror"),
                          FollowFlags(up, up_s3, secrets.path(),
                                      {"--follow-rate", "4MiB", "--follow-parallelism", "2"})));
  REQUIRE(WaitUntil([&] { return Copied(mirror) >= 6; }));
  mirror.tracker.Kill();
  mirror.tracker.Start();
  REQUIRE(WaitForVersion(mirror, "team-a/llama:latest", id));
  // Restarted, it copied only what it had not: at most the 24 less the 6
  // counted before the kill.
  const double after = Copied(mirror);
  CHECK(after <= 24 - 6);
  CHECK(after >= 1);
  Pulls(mirror, "team-a/llama:latest", v1);
}
