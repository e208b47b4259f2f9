// The cluster and checkpoint the pull tests share: a tracker on a folder
// origin that settles fetch orders quickly, N agents on two racks that
// fall back to the origin when no peer answers, and a checkpoint shaped
// like a model's (two shards, a config, a tokenizer).
#ifndef SHOAL_TESTS_INTEGRATION_PULL_CLUSTER_H_
#define SHOAL_TESTS_INTEGRATION_PULL_CLUSTER_H_

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/test_cluster.h"

namespace shoal::testing {

constexpr size_t kMiB = 1 << 20;

// Agent i is on rack r<i % 2>; `extra_agent_flags` go to every agent.
struct PullCluster : TestCluster {
  explicit PullCluster(int n, const std::string& cache_size = "1GiB",
                       std::vector<std::string> tracker_flags = {},
                       std::vector<std::string> extra_agent_flags = {})
      : TestCluster(
            Options(n, cache_size, std::move(tracker_flags), std::move(extra_agent_flags))) {}

  static ClusterOptions Options(int n, const std::string& cache_size,
                                std::vector<std::string> tracker_flags,
                                std::vector<std::string> extra_agent_flags) {
    ClusterOptions o;
    o.tracker_flags = {"--announce-interval", "1s", "--fetch-done-grace", "3s"};
    o.tracker_flags.insert(o.tracker_flags.end(), tracker_flags.begin(), tracker_flags.end());
    o.agents = n;
    o.cache_size = cache_size;
    o.agents_use_origin = true;
    o.rack_labels = true;
    o.agent_flags = {"--origin-fallback-ms", "700"};
    o.agent_flags.insert(o.agent_flags.end(), extra_agent_flags.begin(), extra_agent_flags.end());
    return o;
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
