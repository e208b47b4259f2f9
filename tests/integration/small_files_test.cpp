// A version of many small files, pulled across real agents: a real tracker,
// three shoald processes on 127.0.0.1, a folder origin and the real CLI.
// Its small files share one torrent, so the pull takes seconds and the
// cluster goes quiet afterwards, however many files there are.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "integration/pull_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

// `count` tiny files in 100 folders (every 100th a copy of the first, so
// identical small files occur), plus two files of several 1 MiB pieces.
// Returns the bytes of distinct content.
double MakeManySmallFiles(const std::string& dir, int count) {
  double unique = 0;
  for (int i = 0; i < count; ++i) {
    std::string sub = dir + "/shard-" + std::to_string(i % 100);
    fs::create_directories(sub);
    std::string text = i % 100 == 0 ? std::string("{\"copy\": true}\n")
                                    : "{\"file\": " + std::to_string(i) + ", \"pad\": \"" +
                                          std::string(static_cast<size_t>(i % 23), 'x') + "\"}\n";
    std::ofstream(sub + "/file-" + std::to_string(i) + ".json") << text;
    if (i % 100 != 0 || i == 0) unique += static_cast<double>(text.size());
  }
  WriteRandomFile(dir + "/weights-1.bin", 3 * kMiB + 12345, 7);
  WriteRandomFile(dir + "/weights-2.bin", 2 * kMiB, 8);
  return unique + 5.0 * kMiB + 12345;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

TEST_CASE("a version of 10,000 small files pulls in seconds and leaves the cluster quiet",
          "[small-files]") {
  PullCluster c(3);
  const std::string src = c.tmp / "many";
  const double unique = MakeManySmallFiles(src, 10000);
  c.PublishUnseeded(src, "team-a/many");

  // Every agent pulls at once; each chunk's owner reads it from the origin
  // on the tracker's order, and the others take it from the swarm.
  auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pulls;
  for (int i = 0; i < 3; ++i)
    pulls.push_back(c.StartPull(i, "team-a/many:latest", c.tmp / ("out" + std::to_string(i))));
  for (int i = 0; i < 3; ++i) {
    INFO(Slurp(c.tmp / ("out" + std::to_string(i)) + ".log"));
    REQUIRE(WaitProcess(pulls[static_cast<size_t>(i)]) == 0);
  }
  const double pull_seconds = Seconds(start);
  INFO("pull took " << pull_seconds << " s");
  // About 40 s on a busy 2-core machine; the per-file torrents took minutes.
  CHECK(pull_seconds < 90);
  for (int i = 0; i < 3; ++i) CHECK(SameTree(src, c.tmp / ("out" + std::to_string(i))));
  // The origin was read about once per chunk, for the whole cluster.
  CHECK(c.OriginBytes() >= 0.99 * unique);
  CHECK(c.OriginBytes() <= 1.1 * unique);

  // Each agent runs the small files' bundles (all below 16 KiB, about
  // 9,900 distinct: 16 bundles of about 620, as a bundle averages at most
  // 1,024) and the two large files' own torrents: not a torrent per file.
  for (auto& a : c.agents) CHECK(a->Metric("shoal_agent_torrents") == 16 + 2);

  // Idle, seeders tell the tracker nothing: it holds their swarm entries
  // for as long as their sessions last. One request per torrent and
  // interval would be 54 a second (3 agents, 18 torrents, 1 s).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto requests = [&c] {
    return c.tracker.Metric("shoal_tracker_announces_total") +
           c.tracker.Metric("shoal_tracker_announce_batches_total");
  };
  const double before = requests();
  auto idle_start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const double rate = (requests() - before) / Seconds(idle_start);
  INFO("idle tracker requests per second: " << rate);
  CHECK(rate <= 1);
}
