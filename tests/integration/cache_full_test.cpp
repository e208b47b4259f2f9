// A pull onto a cache whose filesystem fills up: a real tracker, an agent
// seeding a version, and an agent whose cache folder is a 12 MiB tmpfs under
// a 1 GiB budget, so the disk, not the budget, runs out. Chunks reach it
// from the seeder only (it has no origin), through the peer engine's writes.
// Mounting needs root; where it cannot, the test says so and stops.
#include <chrono>
#include <thread>

#include "integration/pull_cluster.h"
#include "support/agent_process.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// A cluster whose agent 0 seeds `name` (24 MiB in `piece_size` pieces), and
// an agent "small" on a 12 MiB disk.
struct SmallDiskCluster : PullCluster {
  std::string ckpt = tmp / "ckpt";
  std::unique_ptr<AgentProcess> small;
  bool mounted = false;

  explicit SmallDiskCluster(const std::string& piece_size) : PullCluster(1) {
    WriteRandomFile(ckpt + "/model.safetensors", 24 * kMiB, 61);
    PublishOk(ckpt, "team-a/m", 0, piece_size);
    small = std::make_unique<AgentProcess>(
        tmp / "agents", "small-disk",
        std::vector<std::string>{"--tracker", tracker.rpc_address(), "--token", agent_token,
                                 "--cache-size", "1GiB", "--stall-timeout-ms", "60000"});
    fs::create_directories(small->cache_dir());
    auto m = RunProcess(
        {"/usr/bin/mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", small->cache_dir()});
    mounted = m.exit_code == 0;
    if (!mounted) {
      WARN("cannot mount a tmpfs here (" << m.err << "); the full-disk check did not run");
      return;
    }
    small->Start();
  }
  ~SmallDiskCluster() {
    small->Stop();
    if (mounted) RunProcess({"/usr/bin/umount", "-l", small->cache_dir()});
  }
  ProcessResult Pull(const std::string& to) {
    return RunProcess({"/usr/bin/timeout", "90", CliBinary(), "pull", "team-a/m:latest", "--to", to,
                       "--agent", small->socket()},
                      {"SHOAL_TOKEN=" + reader});
  }
};

bool NoStagingIn(const std::string& parent) {
  for (const auto& e : fs::directory_iterator(parent)) {
    if (e.path().filename().string().find(".shoal-") != std::string::npos) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a pull stopped by a full cache disk goes on once room appears, evicting as it goes",
          "[control][cache][diskfull]") {
  SmallDiskCluster c("4194304");  // six 4 MiB chunks
  if (!c.mounted) return;
  // Another program holds 9 of the disk's 12 MiB: not one chunk fits, and
  // the cache holds nothing it could evict.
  const std::string filler = c.small->cache_dir() + "/other-program.bin";
  WriteRandomFile(filler, 9 * kMiB, 62);
  const std::string out = c.tmp / "out";
  pid_t pull = StartProcess({"/usr/bin/timeout", "90", CliBinary(), "pull", "team-a/m:latest",
                             "--to", out, "--agent", c.small->socket()},
                            {"SHOAL_TOKEN=" + c.reader}, out + ".log");
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    refused = c.small->Metric("shoal_agent_cache_no_space_total") >= 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(refused);
  // The program goes; the pull goes on at once, and the 24 MiB it writes
  // out fit on the 12 MiB disk as chunks written out are evicted.
  fs::remove(filler);
  const int code = WaitProcess(pull);
  INFO(Slurp(out + ".log") << c.small->log().substr(0, 4000));
  REQUIRE(code == 0);
  CHECK(SameTree(c.ckpt, out));
  CHECK(c.small->Metric("shoal_agent_cache_degraded") == 0);
  CHECK(c.small->Metric("shoal_agent_cache_evictions_total") >= 1);
}

TEST_CASE("a pull no eviction can make room for fails in seconds, saying where and how much",
          "[control][cache][diskfull]") {
  SmallDiskCluster c("16777216");  // a 16 MiB chunk can never fit on the 12 MiB disk
  if (!c.mounted) return;
  const auto start = Clock::now();
  auto pull = c.Pull(c.tmp / "out");
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  INFO(pull.err << c.small->log().substr(0, 4000));
  CHECK(pull.exit_code != 0);
  CHECK(pull.exit_code != 124);  // not the timeout
  CHECK(took < 30);
  CHECK_THAT(pull.err, Catch::Contains(c.small->cache_dir()) && Catch::Contains("free") &&
                           Catch::Contains("needs") && Catch::Contains("16.0 MiB"));
  CHECK_FALSE(fs::exists(c.tmp / "out"));
  CHECK(NoStagingIn(c.tmp.path()));

  // The node says so while it stays full.
  CurlAnswer health =
      c.Curl({"http://127.0.0.1:" + std::to_string(c.small->http_port()) + "/healthz"}, 10);
  CHECK(health.status == 503);
  CHECK_THAT(health.body, Catch::Contains("cache degraded"));
  CHECK(c.small->Metric("shoal_agent_cache_degraded") == 1);
  CHECK(c.small->Metric("shoal_agent_cache_no_space_total") >= 1);
}
