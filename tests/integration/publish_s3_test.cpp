// `shoal publish` into a real S3 server (Ceph radosgw, started by the ctest
// fixture), with a real tracker. Origin bytes are counted twice: by the
// CLI's own origin counters and by radosgw's usage log.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../s3/s3_test_env.h"
#include "shoal/origin.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

std::string UniquePrefix() {
  static std::mt19937_64 rng(std::random_device{}());
  return "publish-test-" + std::to_string(rng() % 1000000000);
}

// A tracker alone on the test bucket (a fresh prefix), and an admin token
// for team-a.
struct S3Cluster : TestCluster {
  explicit S3Cluster(const shoal::OriginOptions& o = shoal_test::TestOptions(UniquePrefix()))
      : TestCluster(Options(o)), s3(o) {
    token = tracker.MintToken("team-a", "admin", "trainer");
  }

  static ClusterOptions Options(const shoal::OriginOptions& o) {
    ClusterOptions options;
    options.origin = {o.url, o.endpoint, o.region, o.access_key, o.secret_key};
    options.tracker_flags = {"--s3-access-key", o.access_key,     "--s3-secret-key",
                             o.secret_key,      "--upload-lease", "10m"};
    return options;
  }

  std::vector<std::string> Env() const { return CliEnv(token); }
  using TestCluster::Shoal;
  ProcessResult Shoal(std::vector<std::string> args) const { return Shoal(token, std::move(args)); }

  shoal::OriginOptions s3;
  std::string token;

  size_t ChunksInBucket() {
    auto o = shoal_test::OpenTestS3(s3);
    size_t n = 0;
    std::string token_;
    do {
      auto page = o->List("chunks/", token_, 1000);
      REQUIRE(page.ok());
      n += page->objects.size();
      token_ = page->next_token;
    } while (!token_.empty());
    return n;
  }
};

// Bytes radosgw took in for PUTs so far, by its own usage log, settled.
uint64_t StableRgwBytesReceived() {
  return shoal_test::SettledRadosgwUsageBytes("bytes_received",
                                              {"put_obj", "complete_multipart", "put_part"});
}

uint64_t PutBytes(const std::string& publish_out) {
  size_t at = publish_out.find("PUT requests, ");
  REQUIRE(at != std::string::npos);
  return std::stoull(publish_out.substr(at + 14));
}

}  // namespace

TEST_CASE("publish to S3 stores every chunk once and an unchanged republish sends nothing",
          "[publish][s3]") {
  S3Cluster c;
  std::string ckpt = c.tmp / "ckpt";
  for (int i = 0; i < 10; ++i) {
    WriteRandomFile(ckpt + "/model-" + std::to_string(i) + ".safetensors",
                    300000 + static_cast<size_t>(i) * 1000, static_cast<unsigned>(i + 1));
  }
  WriteRandomFile(ckpt + "/config.json", 512, 77);
  uint64_t rgw_before = StableRgwBytesReceived();
  auto first = c.Shoal(
      {"publish", ckpt, "--name", "team-a/llama", "--tag", "latest", "--piece-size", "65536"});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const uint64_t total = 10 * 300000 + 45 * 1000 + 512;
  CHECK(PutBytes(first.out) == total);
  CHECK(c.ChunksInBucket() == 10 * 5 + 1);
  uint64_t rgw_after_first = StableRgwBytesReceived();
  CHECK(rgw_after_first - rgw_before >= total);
  CHECK(rgw_after_first - rgw_before < total + total / 20);  // headers are not payload

  // The manifest reads back with a verified signature, and each chunk's bytes
  // in the bucket are the file's bytes.
  auto shown = c.Shoal({"inspect", "team-a/llama:latest"});
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Catch::Contains("11 files"));
  auto o = shoal_test::OpenTestS3(c.s3);
  auto chunks = o->List("chunks/", "", 1000);
  REQUIRE(chunks.ok());
  REQUIRE(chunks->objects.size() == 51);

  auto again = c.Shoal(
      {"publish", ckpt, "--name", "team-a/llama", "--tag", "latest", "--piece-size", "65536"});
  REQUIRE(again.exit_code == 0);
  CHECK(PutBytes(again.out) == 0);
  CHECK_THAT(again.out, Catch::Contains("uploaded 0 chunks"));
  // No chunk goes up again; the republish is a new version (its own time),
  // and only that version's manifest copy is written beside the chunks.
  auto manifests = o->List("manifests/team-a/llama/", "", 1000);
  REQUIRE(manifests.ok());
  REQUIRE(manifests->objects.size() == 2);
  const uint64_t sent_again = StableRgwBytesReceived() - rgw_after_first;
  CHECK((sent_again == manifests->objects[0].size || sent_again == manifests->objects[1].size));

  // One file of ten changed: only its chunks go up.
  WriteRandomFile(ckpt + "/model-3.safetensors", 303000, 1234);
  auto changed = c.Shoal({"publish", ckpt, "--name", "team-a/llama", "--piece-size", "65536"});
  REQUIRE(changed.exit_code == 0);
  CHECK(PutBytes(changed.out) == 303000);
  CHECK_THAT(changed.out, Catch::Contains("uploaded 5 chunks"));
}

TEST_CASE("a publish killed mid-upload leaves no version, and a rerun resumes", "[publish][s3]") {
  S3Cluster c;
  std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/big.safetensors", 48u << 20, 5);
  std::vector<std::string> argv = {CliBinary(),  "publish",    ckpt,   "--name",
                                   "team-a/big", "--tag",      "prod", "--piece-size",
                                   "1048576",    "--parallel", "1"};
  pid_t pid = StartProcess(argv, c.Env(), c.tmp / "publish.log");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (c.ChunksInBucket() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  CHECK(WaitProcess(pid) == 128 + SIGKILL);
  size_t partial = c.ChunksInBucket();
  INFO("chunks uploaded before the kill: " << partial);
  REQUIRE(partial >= 4);
  REQUIRE(partial < 48);

  auto nothing = c.Shoal({"ls", "team-a/big"});
  REQUIRE(nothing.exit_code == 0);
  CHECK_THAT(nothing.out, !Catch::Contains("prod"));
  CHECK(std::count(nothing.out.begin(), nothing.out.end(), '\n') == 1);  // the header alone
  auto not_yet = c.Shoal({"inspect", "team-a/big:prod"});
  CHECK(not_yet.exit_code == 1);

  // The rerun is the same publish (host, folder, name): it takes the dead
  // run's leases over at once instead of waiting 10 minutes for them to
  // lapse, and skips what arrived.
  std::vector<std::string> bounded = {"/usr/bin/timeout", "120"};
  bounded.insert(bounded.end(), argv.begin(), argv.end());
  auto rerun = RunProcess(bounded, c.Env());
  INFO(rerun.out << rerun.err);
  REQUIRE(rerun.exit_code != 124);  // timed out: waiting on its own leases
  REQUIRE(rerun.exit_code == 0);
  CHECK(PutBytes(rerun.out) <= (48u - partial + 1) * (1u << 20));
  CHECK(c.ChunksInBucket() == 48);
  CHECK(c.Shoal({"inspect", "team-a/big:prod"}).exit_code == 0);
}

TEST_CASE("two concurrent publishes of the same content upload each chunk once", "[publish][s3]") {
  S3Cluster c;
  std::string a = c.tmp / "a";
  std::string b = c.tmp / "b";
  for (int i = 0; i < 4; ++i) {
    WriteRandomFile(a + "/shard-" + std::to_string(i), 4u << 20, static_cast<unsigned>(100 + i));
    WriteRandomFile(b + "/shard-" + std::to_string(i), 4u << 20, static_cast<unsigned>(100 + i));
  }
  auto run = [&](const std::string& dir, const std::string& name, const std::string& log) {
    return StartProcess(
        {CliBinary(), "publish", dir, "--name", name, "--piece-size", "1048576", "--parallel", "2"},
        c.Env(), log);
  };
  pid_t p1 = run(a, "team-a/one", c.tmp / "one.log");
  pid_t p2 = run(b, "team-a/two", c.tmp / "two.log");
  REQUIRE(WaitProcess(p1) == 0);
  REQUIRE(WaitProcess(p2) == 0);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  uint64_t sent = PutBytes(slurp(c.tmp / "one.log")) + PutBytes(slurp(c.tmp / "two.log"));
  CHECK(sent == 16u << 20);  // 16 unique chunks of 1 MiB, each sent once
  CHECK(c.ChunksInBucket() == 16);
}
