// Pullable before durable: with the publishing node's agent seeding, a
// version can be pulled as soon as its folder is hashed, while the upload
// to the origin (a real radosgw, reached through a slow link) goes on. Its
// tags wait for durable; a publisher killed mid-upload leaves it failed.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "../s3/s3_test_env.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

std::string UniquePrefix() {
  static std::mt19937_64 rng(std::random_device{}());
  return "publish-early-" + std::to_string(rng() % 1000000000);
}

// The upload link: 1 MiB/s, so a 16 MiB version takes about 16 s to become
// durable, far longer than a pull from the seeding agent.
constexpr int kSlowRate = 1 << 20;

// radosgw behind slow_proxy.py; stops it on destruction.
class SlowLink {
 public:
  SlowLink(const std::string& endpoint, const std::string& dir) {
    const std::string target = endpoint.substr(endpoint.find("://") + 3);
    const std::string port_file = dir + "/slow-proxy.port";
    pid_ = StartProcess(
        {"/usr/bin/python3", SHOAL_SLOW_PROXY, target, std::to_string(kSlowRate), port_file}, {},
        dir + "/slow-proxy.log");
    for (int i = 0; i < 100 && Slurp(port_file).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(!Slurp(port_file).empty());
    endpoint_ = "http://127.0.0.1:" + Slurp(port_file);
  }
  ~SlowLink() {
    ::kill(pid_, SIGTERM);
    WaitProcess(pid_);
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  pid_t pid_ = -1;
  std::string endpoint_;
};

// A tracker on a fresh prefix of the test bucket whose versions' upload
// leases last 2 s, and two agents.
struct EarlyCluster : TestCluster {
  explicit EarlyCluster(const shoal::OriginOptions& o = shoal_test::TestOptions(UniquePrefix()))
      : TestCluster(Options(o)), slow(o.endpoint, tmp.path()) {}

  static ClusterOptions Options(const shoal::OriginOptions& o) {
    ClusterOptions options;
    options.origin = {o.url, o.endpoint, o.region, o.access_key, o.secret_key};
    options.tracker_flags = {"--s3-access-key",     o.access_key, "--s3-secret-key", o.secret_key,
                             "--announce-interval", "1s",         "--publish-lease", "2s"};
    options.agents = 2;
    // They may read the origin, as real agents do; a pull of a version still
    // uploading must not (its chunks may not be there yet).
    options.agents_use_origin = true;
    return options;
  }

  // `shoal publish` seeded by agent 0, its uploads through the slow link.
  pid_t StartSlowPublish(const std::string& dir, std::vector<std::string> extra,
                         const std::string& log) const {
    std::vector<std::string> argv = {
        CliBinary(),    "publish",    dir, "--name",  "team-a/m",          "--piece-size",
        "1048576",      "--parallel", "2", "--agent", agents[0]->socket(), "--s3-endpoint",
        slow.endpoint()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return StartProcess(argv, CliEnv(writer), log);
  }

  // Waits for the publish to say its version is committed and pullable;
  // returns the version's 64 hex digits.
  std::string AwaitCommitted(const std::string& log) const {
    const std::string marker = "committed team-a/m:";
    for (int i = 0; i < 600; ++i) {
      std::string out = Slurp(log);
      size_t at = out.find(marker);
      if (at != std::string::npos && out.size() >= at + marker.size() + 64) {
        return out.substr(at + marker.size(), 64);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL("the publish never said it committed its version early: " << Slurp(log));
    return "";
  }

  // Polls `shoal ls team-a/m` (as the reader) until it mentions `word`.
  bool AwaitListing(const std::string& word, int seconds) const {
    for (int i = 0; i < seconds * 10; ++i) {
      if (Shoal(reader, {"ls", "team-a/m"}).out.find(word) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  ProcessResult Pull(int agent, const std::string& ref, const std::string& dest) const {
    return RunProcess({"/usr/bin/timeout", "60", CliBinary(), "pull", ref, "--to", dest, "--agent",
                       agents[static_cast<size_t>(agent)]->socket()},
                      {"SHOAL_TOKEN=" + reader});
  }

  SlowLink slow;
};

bool StillRunning(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == 0;
}

void WriteCheckpoint(const std::string& dir, unsigned seed) {
  WriteRandomFile(dir + "/model-00001-of-00002.safetensors", 12u << 20, seed);
  WriteRandomFile(dir + "/model-00002-of-00002.safetensors", (4u << 20) - 777, seed + 1);
  WriteRandomFile(dir + "/config.json", 300, seed + 2);
}

}  // namespace

TEST_CASE("a fresh publish is pulled from the publishing node before its upload ends",
          "[publish][early][s3]") {
  EarlyCluster c;
  // The version `prod` points at before this publish.
  WriteRandomFile(c.tmp / "old/config.json", 200, 1);
  auto old = c.Shoal(
      c.writer, {"publish", c.tmp / "old", "--name", "team-a/m", "--tag", "prod", "--no-seed"});
  INFO(old.out << old.err);
  REQUIRE(old.exit_code == 0);
  auto old_prod = c.Shoal(c.reader, {"inspect", "team-a/m:prod"});
  REQUIRE(old_prod.exit_code == 0);

  const std::string ckpt = c.tmp / "ckpt";
  WriteCheckpoint(ckpt, 10);
  const std::string log = c.tmp / "publish.log";
  pid_t publisher = c.StartSlowPublish(ckpt, {"--tag", "prod"}, log);
  const std::string id = c.AwaitCommitted(log);

  auto pulled = c.Pull(1, "team-a/m:" + id, c.tmp / "dest");
  INFO(pulled.out << pulled.err << "\npublish: " << Slurp(log));
  REQUIRE(pulled.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "dest"));
  // The pull is done while the upload still crawls: it came from agent 0.
  REQUIRE(StillRunning(publisher));
  CHECK(c.OriginBytes() == 0);
  auto listing = c.Shoal(c.reader, {"ls", "team-a/m"});
  CHECK_THAT(listing.out, Catch::Contains("uploading"));
  // `prod` waits for durable.
  CHECK(c.Shoal(c.reader, {"inspect", "team-a/m:prod"}).out == old_prod.out);

  REQUIRE(WaitProcess(publisher) == 0);
  CHECK_THAT(Slurp(log), Catch::Contains("published team-a/m:" + id));
  auto prod = c.Shoal(c.reader, {"inspect", "team-a/m:prod"});
  REQUIRE(prod.exit_code == 0);
  CHECK_THAT(prod.out, Catch::Contains(id));
  CHECK_THAT(c.Shoal(c.reader, {"ls", "team-a/m"}).out, !Catch::Contains("uploading"));
}

TEST_CASE("a publisher killed mid-upload leaves its version failed, and a pull says so",
          "[publish][early][s3]") {
  EarlyCluster c;
  const std::string ckpt = c.tmp / "ckpt";
  WriteCheckpoint(ckpt, 20);
  const std::string log = c.tmp / "publish.log";
  // --tag-early: `canary` moves as soon as the version is pullable.
  pid_t publisher = c.StartSlowPublish(ckpt, {"--tag", "canary", "--tag-early"}, log);
  const std::string id = c.AwaitCommitted(log);
  auto canary = c.Shoal(c.reader, {"inspect", "team-a/m:canary"});
  CHECK(canary.exit_code == 0);
  CHECK_THAT(canary.out, Catch::Contains(id));
  REQUIRE(StillRunning(publisher));
  ::kill(publisher, SIGKILL);
  REQUIRE(WaitProcess(publisher) == 128 + SIGKILL);

  // Its lease (2 s) lapses: the version is failed, and says why.
  REQUIRE(c.AwaitListing("failed", 20));
  auto pull = c.Pull(1, "team-a/m:" + id, c.tmp / "dest");
  CHECK(pull.exit_code != 0);
  CHECK_THAT(pull.err, Catch::Contains("failed"));
  CHECK(std::count(pull.err.begin(), pull.err.end(), '\n') == 1);  // one line
  auto tagged = c.Shoal(c.reader, {"pull", "team-a/m:canary", "--to", c.tmp / "dest2", "--agent",
                                   c.agents[1]->socket()});
  CHECK(tagged.exit_code != 0);
  CHECK_THAT(tagged.err, Catch::Contains("failed"));

  // Published again, the folder becomes a durable version, uploading only
  // what the dead run had not.
  auto again = c.Shoal(c.writer, {"publish", ckpt, "--name", "team-a/m", "--piece-size", "1048576",
                                  "--tag", "canary", "--agent", c.agents[0]->socket()});
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  auto pulled = c.Pull(1, "team-a/m:canary", c.tmp / "dest3");
  INFO(pulled.out << pulled.err);
  REQUIRE(pulled.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "dest3"));
}
