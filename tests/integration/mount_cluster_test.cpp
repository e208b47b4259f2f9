// `shoal mount` on every node of a cold cluster: a real tracker, three
// shoald processes on a folder origin, and a mount on each, read at once
// as three inference servers starting together would.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "integration/mount_process.h"
#include "integration/pull_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

// The cluster of the pull tests, with one mount folder per agent.
struct MountedCluster : PullCluster {
  std::vector<std::string> dirs;
  std::vector<pid_t> pids;

  MountedCluster() : PullCluster(3) {}
  ~MountedCluster() {
    for (size_t i = 0; i < pids.size(); ++i) ForceUnmount(pids[i], dirs[i]);
  }

  // Mounts `ref` through agent `i` on tmp/mnt<i>.
  void MountOn(size_t i, const std::string& ref) {
    dirs.push_back(tmp / ("mnt" + std::to_string(i)));
    fs::create_directories(dirs.back());
    const std::string log = tmp / ("mount" + std::to_string(i) + ".log");
    pids.push_back(StartMount(*agents[i], ref, dirs.back(), reader, log));
    INFO(Slurp(log));
    REQUIRE(Mounted(dirs.back()));
  }
};

// Every regular file under `dir`, relative to it.
std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), dir).string());
  return files;
}

}  // namespace

TEST_CASE("three cold mounts read a whole version at once: the same bytes, the origin read once",
          "[mount][cluster]") {
  MountedCluster c;
  const std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 21);
  c.PublishUnseeded(ckpt, "team-a/m");
  // 10 + 7 pieces of the two shards, the tokenizer's one, and the config's
  // bundle.
  const double version_chunks = 19;
  for (auto& a : c.agents) REQUIRE(a->Metric("shoal_agent_cache_chunks") == 0);
  for (size_t i = 0; i < 3; ++i) c.MountOn(i, "team-a/m:latest");

  // The first MiB of the first shard comes while most of the version has
  // yet to reach this node: its piece, and the next if the kernel's own
  // read-ahead reaches it. One read is no stream, so the mount asks for
  // nothing ahead of it.
  const std::string shard = Slurp(ckpt + "/model-00001.safetensors");
  int fd = ::open((c.dirs[0] + "/model-00001.safetensors").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::string head(kMiB, '\0');
  const auto start = std::chrono::steady_clock::now();
  const ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const double chunks_then = c.agents[0]->Metric("shoal_agent_cache_chunks");
  ::close(fd);
  std::printf("cold mount, first MiB: %.1f ms, %.0f of the version's %.0f chunks cached then\n", ms,
              chunks_then, version_chunks);
  CHECK(got == static_cast<ssize_t>(kMiB));
  CHECK(head == shard.substr(0, kMiB));
  CHECK(chunks_then >= 1);
  CHECK(chunks_then <= 2);
  CHECK(chunks_then < version_chunks);

  // Then every file through every mount at once, a reader per file.
  const std::vector<std::string> files = FilesUnder(ckpt);
  std::vector<std::vector<std::string>> bytes(3, std::vector<std::string>(files.size()));
  std::vector<std::thread> readers;
  for (size_t m = 0; m < 3; ++m) {
    for (size_t f = 0; f < files.size(); ++f)
      readers.emplace_back([&, m, f] { bytes[m][f] = Slurp(c.dirs[m] + "/" + files[f]); });
  }
  for (std::thread& t : readers) t.join();
  for (size_t f = 0; f < files.size(); ++f) {
    INFO(files[f]);
    const std::string want = Slurp(ckpt + "/" + files[f]);
    for (size_t m = 0; m < 3; ++m) CHECK(bytes[m][f] == want);
  }
  for (size_t m = 0; m < 3; ++m) CHECK(SameTree(ckpt, c.dirs[m]));

  // Each chunk's owner read it from the origin, on the tracker's order, and
  // the other two nodes took it from the swarm: once per chunk. The only
  // second reads allowed are the tracker's takeovers of an owner that did
  // not answer in time (an fsync stalled for seconds on a loaded disk does
  // that), one chunk of at most 1 MiB each, and the tracker counts them.
  const double takeovers = c.tracker.Metric("shoal_tracker_takeovers_total");
  std::printf("three cold mounts: origin bytes %.0f (%.3f x the version), %g takeovers\n",
              c.OriginBytes(), c.OriginBytes() / kUnique, takeovers);
  CHECK(c.OriginBytes() >= kUnique);
  CHECK(c.OriginBytes() <= kUnique + takeovers * kMiB);
}
