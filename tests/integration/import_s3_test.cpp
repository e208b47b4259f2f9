// `shoal import s3://bucket/prefix` from a real S3 server (the tests'
// radosgw), with the source's own endpoint and credentials, into a cluster
// whose origin is a folder: the bucket is read once and the version pulls
// back byte for byte.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <thread>

#include "../s3/s3_test_env.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

TEST_CASE("a bucket prefix becomes a version, read once", "[import][s3]") {
  ClusterOptions options;
  options.agents = 1;
  options.agents_use_origin = true;
  TestCluster c(options);

  // The checkpoint, put into the bucket under a fresh prefix.
  const std::string folder = c.tmp / "ckpt";
  WriteRandomFile(folder + "/model.safetensors", (2 << 20) + 999, 11);
  WriteRandomFile(folder + "/sub/config.json", 300, 12);
  const std::string prefix = "import-test-" + std::to_string(std::random_device{}() % 1000000000);
  shoal::OriginOptions s3 = shoal_test::TestOptions(prefix);
  auto bucket = shoal_test::OpenTestS3(s3);
  for (const auto& e : fs::recursive_directory_iterator(folder)) {
    if (!e.is_regular_file()) continue;
    REQUIRE(shoal::PutFile(*bucket, fs::relative(e.path(), folder).string(), e.path()).ok());
  }
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(folder)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  // radosgw's own count of the bytes it sent, independent of the CLI's.
  const uint64_t sent_before = shoal_test::SettledRadosgwUsageBytes("bytes_sent", {"get_obj"});

  std::vector<std::string> env = c.CliEnv(c.writer);
  env.push_back("AWS_ACCESS_KEY_ID=" + s3.access_key);
  env.push_back("AWS_SECRET_ACCESS_KEY=" + s3.secret_key);
  std::vector<std::string> argv = {
      SHOAL_CLI_PATH, "import",          s3.url,         "--name",  "team-a/from-s3",
      "--tag",        "latest",          "--piece-size", "1048576", "--source-endpoint",
      s3.endpoint,    "--source-region", s3.region};
  ProcessResult r = RunProcess(argv, env);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("read 2 files"));
  CHECK_THAT(r.out, Catch::Contains("from " + s3.url));
  // Read once: the bucket sent each byte once (the other tests of the
  // fixture hold its lock, so nothing else reads it meanwhile).
  CHECK(shoal_test::SettledRadosgwUsageBytes("bytes_sent", {"get_obj"}) - sent_before == total);

  pid_t pull = c.StartPull(0, "team-a/from-s3:latest", c.tmp / "out");
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(folder, c.tmp / "out"));

  // Again: nothing read, nothing uploaded, the same version.
  std::vector<std::string> again_argv = argv;
  again_argv.push_back("--json");
  ProcessResult again = RunProcess(again_argv, env);
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("\"created\":false"));
  CHECK_THAT(again.out,
             Catch::Contains("\"uploaded_chunks\":0,\"uploaded_bytes\":0,\"read_bytes\":0"));

  // Through a link that flips one bit of what the bucket sends: the
  // object's ETag (its MD5) catches it, and nothing is committed.
  const std::string port_file = c.tmp / "flip.port";
  const std::string target = s3.endpoint.substr(s3.endpoint.find("://") + 3);
  pid_t proxy =
      StartProcess({"/usr/bin/python3", SHOAL_SLOW_PROXY, target, "1e12", port_file, "200000"}, {},
                   c.tmp / "flip.log");
  for (int i = 0; i < 100 && Slurp(port_file).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<std::string> flip_argv = {SHOAL_CLI_PATH,
                                        "import",
                                        s3.url,
                                        "--name",
                                        "team-a/flipped",
                                        "--piece-size",
                                        "1048576",
                                        "--source-endpoint",
                                        "http://127.0.0.1:" + Slurp(port_file),
                                        "--source-region",
                                        s3.region,
                                        "--no-resume"};
  ProcessResult flipped = RunProcess(flip_argv, env);
  ::kill(proxy, SIGTERM);
  WaitProcess(proxy);
  INFO(flipped.out << flipped.err);
  CHECK(flipped.exit_code != 0);
  CHECK_THAT(flipped.err, Catch::Contains("model.safetensors") && Catch::Contains("MD5"));
  ProcessResult ls = c.Shoal(c.reader, {"ls", "team-a/flipped", "--json"});
  CHECK((ls.exit_code != 0 || ls.out.find("versionId") == std::string::npos));

  // Wrong credentials: one line naming the source.
  std::vector<std::string> wrong = c.CliEnv(c.writer);
  wrong.push_back("AWS_ACCESS_KEY_ID=" + s3.access_key);
  wrong.push_back("AWS_SECRET_ACCESS_KEY=wrong");
  argv.push_back("--no-resume");
  ProcessResult bad = RunProcess(argv, wrong);
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Catch::Contains(s3.url));
}
