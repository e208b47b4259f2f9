// A real cluster for agent tests: a tracker, N shoald processes on
// 127.0.0.1 with a folder origin, and the real shoal CLI.
#ifndef SHOAL_TESTS_INTEGRATION_PULL_CLUSTER_H_
#define SHOAL_TESTS_INTEGRATION_PULL_CLUSTER_H_

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/agent_process.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

namespace shoal::testing {

constexpr size_t kMiB = 1 << 20;

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::vector<std::string> TrackerFlags(const std::string& origin,
                                             std::vector<std::string> extra) {
  std::vector<std::string> flags = {"--origin", "file://" + origin,   "--announce-interval",
                                    "1s",       "--fetch-done-grace", "3s"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

// `extra_agent_flags` go to every agent.
struct Cluster {
  TempDir tmp;
  std::string origin = tmp / "origin";
  TrackerProcess tracker;
  std::string agent_token, writer, reader;
  std::vector<std::unique_ptr<AgentProcess>> agents;

  explicit Cluster(int n, const std::string& cache_size = "1GiB",
                   std::vector<std::string> tracker_flags = {},
                   std::vector<std::string> extra_agent_flags = {})
      : tracker(tmp / "tracker", TrackerFlags(tmp / "origin", std::move(tracker_flags))) {
    std::filesystem::create_directories(origin);
    tracker.Start();
    agent_token = tracker.MintToken("*", "read", "agents");
    writer = tracker.MintToken("team-a", "write", "trainer");
    reader = tracker.MintToken("team-a", "read", "pod");
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> flags = {"--tracker",
                                        tracker.rpc_address(),
                                        "--token",
                                        agent_token,
                                        "--origin",
                                        "file://" + origin,
                                        "--origin-fallback-ms",
                                        "700",
                                        "--cache-size",
                                        cache_size,
                                        "--label",
                                        "rack=r" + std::to_string(i % 2)};
      flags.insert(flags.end(), extra_agent_flags.begin(), extra_agent_flags.end());
      agents.push_back(
          std::make_unique<AgentProcess>(tmp / "agents", "agent" + std::to_string(i), flags));
      agents.back()->Start();
    }
  }
  ProcessResult Shoal(const std::string& token, std::vector<std::string> args) {
    args.insert(args.begin(), CliBinary());
    return RunProcess(args, {"SHOAL_TRACKER=" + tracker.rpc_address(), "SHOAL_TOKEN=" + token,
                             "SHOAL_ORIGIN=file://" + origin});
  }
  ProcessResult Publish(const std::string& dir, const std::string& name, int seeder) {
    std::vector<std::string> args = {"publish", dir,      "--name",       name,
                                     "--tag",   "latest", "--piece-size", "1048576"};
    if (seeder >= 0) {
      args.push_back("--agent");
      args.push_back(agents[static_cast<size_t>(seeder)]->socket());
    } else {
      args.push_back("--no-seed");
    }
    return Shoal(writer, args);
  }
  // Publishes `dir` without seeding it, then waits until every agent has
  // seen the whole ring, so each chunk's owner is settled.
  void PublishUnseeded(const std::string& dir, const std::string& name) {
    auto pub = Publish(dir, name, -1);
    INFO(pub.out << pub.err);
    REQUIRE(pub.exit_code == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  }
  pid_t StartPull(int agent, const std::string& ref, const std::string& dest) {
    return StartProcess({CliBinary(), "pull", ref, "--to", dest, "--agent",
                         agents[static_cast<size_t>(agent)]->socket()},
                        {"SHOAL_TOKEN=" + reader}, dest + ".log");
  }
  double OriginBytes() {
    double total = 0;
    for (auto& a : agents) total += a->Metric("shoal_agent_origin_bytes_total");
    return total;
  }
};

inline std::string MakeCheckpoint(const std::string& dir, unsigned seed) {
  WriteRandomFile(dir + "/model-00001.safetensors", 9 * kMiB + 12345, seed);
  WriteRandomFile(dir + "/model-00002.safetensors", 7 * kMiB, seed + 1);
  WriteRandomFile(dir + "/config.json", 1500, seed + 2);
  WriteRandomFile(dir + "/tokenizer/tokenizer.json", 300000, seed + 3);
  return dir;
}

inline const double kUnique = 9.0 * kMiB + 12345 + 7 * kMiB + 1500 + 300000;

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_INTEGRATION_PULL_CLUSTER_H_
