// Agents with a real S3 origin (radosgw, started by the ctest fixture): the
// origin's own usage log must agree that a cluster pull reads each chunk at
// most about once.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../s3/s3_test_env.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

// Bytes radosgw's GETs have served so far, by its own usage log, settled.
uint64_t RgwBytesSent() { return shoal_test::SettledRadosgwUsageBytes("bytes_sent", {"get_obj"}); }

}  // namespace

// A tracker and `n` agents, all with the test bucket (under a fresh prefix)
// as their origin.
struct S3AgentCluster : TestCluster {
  explicit S3AgentCluster(int n) : TestCluster(Options(n)) {
    // Every agent has seen the whole ring once its heartbeat follows the last join.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  }

  static ClusterOptions Options(int n) {
    shoal::OriginOptions o = shoal_test::TestOptions(
        "agent-test-" + std::to_string(std::random_device{}() % 1000000000));
    ClusterOptions options;
    options.origin = {o.url, o.endpoint, o.region, o.access_key, o.secret_key};
    options.agents = n;
    options.cache_size = "1GiB";
    options.agents_use_origin = true;
    options.agent_flags = {"--origin-fallback-ms", "1000"};
    // Two RPC loops whatever the machine's cores: the agents' sessions and
    // the fetch orders they get cross between the loops and the scheduler's.
    options.tracker_flags.insert(options.tracker_flags.end(), {"--rpc-threads", "2"});
    return options;
  }

  using TestCluster::StartPull;
  // Pulls the checkpoint through agent i into tmp/out<i>.
  pid_t StartPull(size_t i) const {
    return StartPull(static_cast<int>(i), "team-a/llama:latest", tmp / ("out" + std::to_string(i)));
  }

  // A figure the pull of agent i printed: "in X s" or "after X s".
  double PullFigure(size_t i, const std::string& before) {
    std::ifstream in(tmp / ("out" + std::to_string(i) + ".log"));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    size_t at = text.find(before);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + before.size()));
  }

  // Publishes a checkpoint of about `mib` MiB in several files; returns its bytes.
  double PublishCheckpoint(const std::string& ckpt, bool seed, size_t mib = 512) {
    const size_t shard = mib * 2 / 5;
    WriteRandomFile(ckpt + "/model-00001-of-00003.safetensors", shard << 20, 1);
    WriteRandomFile(ckpt + "/model-00002-of-00003.safetensors", shard << 20, 2);
    WriteRandomFile(ckpt + "/model-00003-of-00003.safetensors", ((mib - 2 * shard) << 20) - 4096,
                    3);
    WriteRandomFile(ckpt + "/config.json", 900, 4);
    WriteRandomFile(ckpt + "/tokenizer.json", 3000, 5);
    PublishOk(ckpt, "team-a/llama", seed ? 0 : -1, "16777216");
    return static_cast<double>(mib << 20) - 4096 + 900 + 3000;
  }

  // Starts pulls on agents [first, agents.size()) at once and waits for all.
  void PullAll(size_t first, const std::string& ckpt) {
    std::vector<pid_t> pulls;
    for (size_t i = first; i < agents.size(); ++i) pulls.push_back(StartPull(i));
    for (pid_t p : pulls) REQUIRE(WaitProcess(p) == 0);
    for (size_t i = first; i < agents.size(); ++i)
      CHECK(SameTree(ckpt, tmp / ("out" + std::to_string(i))));
  }
};

TEST_CASE("four agents pull from an S3 origin that serves each chunk at most once", "[agent][s3]") {
  S3AgentCluster c(4);
  std::string ckpt = c.tmp / "ckpt";
  double unique = c.PublishCheckpoint(ckpt, /*seed=*/true);
  uint64_t rgw_before = RgwBytesSent();
  c.PullAll(1, ckpt);
  double agents_origin = c.OriginBytes();
  uint64_t rgw_sent = RgwBytesSent() - rgw_before;
  INFO("agents' origin bytes " << agents_origin << ", radosgw GET bytes " << rgw_sent);
  CHECK(agents_origin <= 1.05 * unique);
  CHECK(static_cast<double>(rgw_sent) <= 1.05 * unique);
  CHECK(static_cast<double>(rgw_sent) == Approx(agents_origin).margin(4096));
}

TEST_CASE("six agents with nothing cached pull at once and only owners read the origin",
          "[agent][s3][ring]") {
  S3AgentCluster c(6);
  std::string ckpt = c.tmp / "ckpt";
  double unique = c.PublishCheckpoint(ckpt, /*seed=*/false);
  uint64_t rgw_before = RgwBytesSent();
  c.PullAll(0, ckpt);
  double agents_origin = c.OriginBytes();
  uint64_t rgw_sent = RgwBytesSent() - rgw_before;
  double owner = 0, takeover = 0;
  for (auto& a : c.agents) {
    owner += a->Metric("shoal_agent_origin_fetches_total{reason=\"owner\"}");
    takeover += a->Metric("shoal_agent_origin_fetches_total{reason=\"takeover\"}");
  }
  std::printf(
      "six agents, cold: origin bytes %.0f (%.3f x unique) by the agents, %llu by radosgw; "
      "%.0f owner fetches, %.0f takeovers\n",
      agents_origin, agents_origin / unique, static_cast<unsigned long long>(rgw_sent), owner,
      takeover);
  CHECK(agents_origin <= 1.02 * unique);
  CHECK(static_cast<double>(rgw_sent) <= 1.02 * unique);
  CHECK(static_cast<double>(rgw_sent) == Approx(agents_origin).margin(4096));
  CHECK(owner > 0);
  // Paced, neediest first: the first chunks are shareable long before the
  // last leaves the origin.
  double first_min = 1e9, first_max = 0, done_min = 1e9;
  for (size_t i = 0; i < c.agents.size(); ++i) {
    double first = c.PullFigure(i, "first chunk arrived after ");
    first_min = std::min(first_min, first);
    first_max = std::max(first_max, first);
    done_min = std::min(done_min, c.PullFigure(i, " in "));
  }
  std::printf(
      "six agents, cold: first chunks arrived after %.2f to %.2f s; the first puller to finish "
      "took %.2f s; "
      "tracker: %g owner fetches, %g takeovers, %g orders\n",
      first_min, first_max, done_min,
      c.tracker.Metric("shoal_tracker_origin_fetches_total{reason=\"owner\"}"),
      c.tracker.Metric("shoal_tracker_takeovers_total"),
      c.tracker.Metric("shoal_tracker_fetch_orders_total"));
  CHECK(first_min > 0);
  CHECK(first_min < 0.5 * done_min);
}

TEST_CASE("agents join and leave during a pull, and every puller completes with the right bytes",
          "[agent][s3][ring]") {
  S3AgentCluster c(5);
  std::string ckpt = c.tmp / "ckpt";
  double unique = c.PublishCheckpoint(ckpt, /*seed=*/false, 256);
  uint64_t rgw_before = RgwBytesSent();
  std::vector<std::pair<size_t, pid_t>> pulls;
  for (size_t i : {0, 1, 2}) pulls.push_back({i, c.StartPull(i)});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  c.AddAgent();  // agent 5 joins and pulls
  pulls.push_back({5, c.StartPull(5)});
  // What the leaving owners fetched may be lost with them, and fetched again once.
  double departed = c.agents[3]->Metric("shoal_agent_origin_bytes_total");
  c.agents[3]->Stop();  // an owner leaves cleanly
  c.AddAgent();         // agent 6 joins, owns chunks, does not pull
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  departed += c.agents[4]->Metric("shoal_agent_origin_bytes_total");
  c.agents[4]->Kill();  // an owner crashes
  for (auto [i, pid] : pulls) {
    INFO("agent " << i << ": " << c.agents[i]->log());
    REQUIRE(WaitProcess(pid) == 0);
    CHECK(SameTree(ckpt, c.tmp / ("out" + std::to_string(i))));
  }
  uint64_t rgw_sent = RgwBytesSent() - rgw_before;
  std::printf(
      "join and leave: origin bytes %llu (%.3f x unique) by radosgw; the leavers had fetched %.0f; "
      "%g takeovers\n",
      static_cast<unsigned long long>(rgw_sent), static_cast<double>(rgw_sent) / unique, departed,
      c.tracker.Metric("shoal_tracker_takeovers_total"));
  // Each chunk once, plus at most once more what left with the two owners:
  // what they had fetched, and the orders they held in flight (2 each, of 16 MiB).
  CHECK(static_cast<double>(rgw_sent) <= unique + departed + 2 * 2 * (16 << 20));
}

TEST_CASE(
    "when an owner dies mid-pull, the next in rank takes over and the origin is read little more",
    "[agent][s3][ring]") {
  S3AgentCluster c(6);
  std::string ckpt = c.tmp / "ckpt";
  double unique = c.PublishCheckpoint(ckpt, /*seed=*/false, 256);
  uint64_t rgw_before = RgwBytesSent();
  std::string reader = c.tracker.MintToken("team-a", "read", "pod");
  std::vector<pid_t> pulls;
  for (size_t i = 0; i < c.agents.size(); ++i) {
    std::string dest = c.tmp / ("out" + std::to_string(i));
    pulls.push_back(StartProcess({CliBinary(), "pull", "team-a/llama:latest", "--to", dest,
                                  "--agent", c.agents[i]->socket()},
                                 {"SHOAL_TOKEN=" + reader}, dest + ".log"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  double dead_origin = c.agents[0]->Metric("shoal_agent_origin_bytes_total");
  c.agents[0]->Kill();  // an owner, mid-pull
  WaitProcess(pulls[0]);
  for (size_t i = 1; i < pulls.size(); ++i) REQUIRE(WaitProcess(pulls[i]) == 0);
  for (size_t i = 1; i < c.agents.size(); ++i)
    CHECK(SameTree(ckpt, c.tmp / ("out" + std::to_string(i))));
  double origin = dead_origin;
  for (size_t i = 1; i < c.agents.size(); ++i)
    origin += c.agents[i]->Metric("shoal_agent_origin_bytes_total");
  uint64_t rgw_sent = RgwBytesSent() - rgw_before;
  std::printf(
      "owner killed: origin bytes %llu (%.3f x unique) by radosgw, at least %.0f by the agents\n",
      static_cast<unsigned long long>(rgw_sent), static_cast<double>(rgw_sent) / unique, origin);
  // What the dead owner had read may be read once more (no survivor may
  // have taken it yet), and a piece or two it was reading when it died.
  CHECK(static_cast<double>(rgw_sent) <= unique + dead_origin + 2 * (16 << 20));
  CHECK(static_cast<double>(rgw_sent) <= 1.5 * unique);
}
