// `shoal mount`: a published version as a read-only FUSE folder, read
// through a real agent on a folder origin, with a real tracker, on
// 127.0.0.1. The test process reads the mount as any program would.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "integration/mount_process.h"
#include "shoal/token.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMiB = 1 << 20;
using Clock = std::chrono::steady_clock;

// How many of `path`'s bytes are in the page cache (mincore), to the page.
size_t CachedBytes(const std::string& path) {
  const size_t size = fs::file_size(path);
  const int fd = ::open(path.c_str(), O_RDONLY);
  void* map = fd < 0 ? MAP_FAILED : ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (fd >= 0) ::close(fd);
  if (map == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((size + page - 1) / page);
  size_t cached = 0;
  if (::mincore(map, size, in.data()) == 0) {
    for (unsigned char c : in) cached += (c & 1) ? page : 0;
  }
  ::munmap(map, size);
  return std::min(cached, size);
}

// Drops `path` from the page cache, as a host with little memory would.
void Evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

std::string Xattr(const std::string& path, const std::string& name) {
  char buf[256];
  ssize_t n = ::getxattr(path.c_str(), name.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

// One agent reading a folder origin; model team-a/llama published to the
// origin only, so the agent starts cold and fetches what the mount reads.
struct MountCluster : TestCluster {
  std::string ckpt = tmp / "ckpt", mnt = tmp / "mnt";
  pid_t mount_pid = -1;

  MountCluster() : TestCluster(Options()) {
    AddAgent();
    WriteRandomFile(ckpt + "/model-00001-of-00001.safetensors", 5 * kMiB + 12345, 1);
    WriteRandomFile(ckpt + "/config.json", 900, 2);
    WriteRandomFile(ckpt + "/tokenizer/vocab a+b.txt", 300000, 3);
    WriteRandomFile(ckpt + "/tokenizer/merges.txt", 70000, 4);
    PublishOk(ckpt, "team-a/llama", -1);
    fs::create_directories(mnt);
  }

  // A mount left behind by a failed check goes before the folders do.
  ~MountCluster() { ForceUnmount(mount_pid, mnt); }

  static ClusterOptions Options() {
    ClusterOptions o;
    o.agents_use_origin = true;
    o.agent_flags = {"--read-origin-wait-ms", "100"};
    return o;
  }

  // Starts `shoal mount ref mnt` with `flags` as the reader and waits until
  // the folder is mounted.
  void StartMount(const std::string& ref, std::vector<std::string> flags = {},
                  const std::string& token = "") {
    mount_pid = shoal::testing::StartMount(*agents[0], ref, mnt, token.empty() ? reader : token,
                                           tmp / "mount.log", flags);
    INFO(Slurp(tmp / "mount.log"));
    REQUIRE(Mounted(mnt));
  }

  // Sends `signal` to the mount and returns its exit code.
  int StopMount(int signal) {
    ::kill(mount_pid, signal);
    const int code = WaitProcess(mount_pid);
    mount_pid = -1;
    return code;
  }

  // The version IDs `shoal ls` lists for team-a/llama, and the one tagged latest.
  std::string LatestVersion() const {
    ProcessResult r = Shoal(reader, {"ls", "team-a/llama"});
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find("latest") != std::string::npos) return line.substr(0, 64);
    }
    return "";
  }
};

}  // namespace

TEST_CASE("a mounted version shows the checkpoint's files, byte for byte, read-only", "[mount]") {
  MountCluster c;
  const std::string version = c.LatestVersion();
  REQUIRE(version.size() == 64);
  c.StartMount("team-a/llama:latest");

  // Every file, its size and mode, as published.
  CHECK(SameTree(c.ckpt, c.mnt));
  CHECK(SameTree(c.mnt, c.ckpt));
  for (const auto& e : fs::recursive_directory_iterator(c.ckpt)) {
    const std::string rel = fs::relative(e.path(), c.ckpt).string();
    INFO(rel);
    struct stat want {
    }, got{};
    REQUIRE(::stat(e.path().c_str(), &want) == 0);
    REQUIRE(::stat((c.mnt + "/" + rel).c_str(), &got) == 0);
    CHECK(S_ISDIR(got.st_mode) == S_ISDIR(want.st_mode));
    if (S_ISREG(want.st_mode)) {
      CHECK(got.st_size == want.st_size);
      CHECK((got.st_mode & 0777) == (want.st_mode & 0777));
    }
  }

  // A range in the middle of the big file, across a piece boundary.
  const std::string shard = Slurp(c.ckpt + "/model-00001-of-00001.safetensors");
  int fd = ::open((c.mnt + "/model-00001-of-00001.safetensors").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::string mid(70000, '\0');
  CHECK(::pread(fd, mid.data(), mid.size(), 3 * kMiB - 1000) == 70000);
  CHECK(mid == shard.substr(3 * kMiB - 1000, 70000));
  ::close(fd);

  // Nothing changes it.
  errno = 0;
  CHECK(::open((c.mnt + "/config.json").c_str(), O_WRONLY) == -1);
  CHECK(errno == EROFS);
  errno = 0;
  CHECK(::open((c.mnt + "/new.txt").c_str(), O_WRONLY | O_CREAT, 0644) == -1);
  CHECK(errno == EROFS);
  errno = 0;
  CHECK(::mkdir((c.mnt + "/dir").c_str(), 0755) == -1);
  CHECK(errno == EROFS);
  errno = 0;
  CHECK(::unlink((c.mnt + "/config.json").c_str()) == -1);
  CHECK(errno == EROFS);
  errno = 0;
  CHECK(::rename((c.mnt + "/config.json").c_str(), (c.mnt + "/c.json").c_str()) == -1);
  CHECK(errno == EROFS);

  // Each file names its version and its pieces root.
  CHECK(Xattr(c.mnt + "/config.json", "user.shoal.version") == version);
  CHECK(Xattr(c.mnt + "/tokenizer/merges.txt", "user.shoal.pieces_root").size() == 64);

  // A tag moved after mounting does not change the mount.
  const std::string next = c.tmp / "next";
  WriteRandomFile(next + "/config.json", 1200, 9);
  c.PublishOk(next, "team-a/llama", -1);
  REQUIRE(c.LatestVersion() != version);
  CHECK(Xattr(c.mnt + "/tokenizer/vocab a+b.txt", "user.shoal.version") == version);
  CHECK(fs::file_size(c.mnt + "/config.json") == 900);
  CHECK(Slurp(c.mnt + "/tokenizer/merges.txt") == Slurp(c.ckpt + "/tokenizer/merges.txt"));

  // SIGTERM unmounts and ends the process cleanly.
  CHECK(c.StopMount(SIGTERM) == 0);
  CHECK(!Mounted(c.mnt));
}

TEST_CASE("a stream through a mount has the next chunk file read ahead of it", "[mount]") {
  MountCluster c;
  c.StartMount("team-a/llama:latest");
  const std::string path = c.mnt + "/model-00001-of-00001.safetensors";
  const std::string shard = Slurp(c.ckpt + "/model-00001-of-00001.safetensors");
  // O_DIRECT: every read reaches the mount as asked, past the kernel's
  // page cache and read-ahead of the mounted file.
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  REQUIRE(fd >= 0);
  constexpr size_t kRead = 128 << 10;
  void* buf = nullptr;
  REQUIRE(::posix_memalign(&buf, 4096, kRead) == 0);
  std::unique_ptr<void, decltype(&std::free)> hold(buf, &std::free);

  // The whole file once, so that every chunk is in the agent's cache; then
  // the chunk files out of the page cache, and the file's fourth piece
  // (bytes [3, 4) MiB, 1 MiB pieces) found among them by its bytes.
  for (off_t off = 0; ::pread(fd, buf, kRead, off) > 0; off += kRead) {
  }
  ::close(fd);
  std::string fourth;
  for (const auto& e : fs::recursive_directory_iterator(c.agents[0]->cache_dir())) {
    if (!e.is_regular_file() || e.file_size() != kMiB) continue;
    if (Slurp(e.path()) == shard.substr(3 * kMiB, kMiB)) fourth = e.path();
    Evict(e.path());
  }
  REQUIRE(!fourth.empty());
  REQUIRE(CachedBytes(fourth) < kMiB);

  // A stream of 128 KiB reads through the first 2.25 MiB: its reads touch
  // the first three pieces only, and the mount reads the fourth's chunk
  // file ahead of them.
  fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  REQUIRE(fd >= 0);
  for (off_t off = 0; off < off_t(2 * kMiB + 2 * kRead); off += kRead) {
    REQUIRE(::pread(fd, buf, kRead, off) == static_cast<ssize_t>(kRead));
    CHECK(std::string(static_cast<char*>(buf), kRead) == shard.substr(size_t(off), kRead));
  }
  ::close(fd);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (CachedBytes(fourth) < kMiB && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(CachedBytes(fourth) == kMiB);
}

TEST_CASE("a mount fails reads with EIO while its agent is gone, and reads again once it is back",
          "[mount]") {
  MountCluster c;
  c.StartMount("team-a/llama", {"--call-timeout-ms", "2000"});
  CHECK(Slurp(c.mnt + "/config.json") == Slurp(c.ckpt + "/config.json"));

  c.agents[0]->Kill();
  const std::string path = c.mnt + "/model-00001-of-00001.safetensors";
  int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  char buf[4096];
  const auto start = Clock::now();
  errno = 0;
  CHECK(::pread(fd, buf, sizeof(buf), 2 * kMiB) == -1);
  CHECK(errno == EIO);
  CHECK(Clock::now() - start < std::chrono::seconds(4));  // the 2 s bound, with room
  ::close(fd);

  // The tag moves while the agent is down: the mount comes back to its own
  // version, by ID.
  const std::string next = c.tmp / "next";
  WriteRandomFile(next + "/tokenizer/vocab a+b.txt", 1000, 9);
  c.PublishOk(next, "team-a/llama", -1);
  c.agents[0]->Start();
  // Readers at once, on one reconnection: the shard's six pieces and a file.
  const std::string shard = Slurp(c.ckpt + "/model-00001-of-00001.safetensors");
  std::vector<std::string> got(7);
  std::vector<std::thread> readers;
  for (size_t i = 0; i < 6; ++i) {
    readers.emplace_back([&, i] {
      int f = ::open(path.c_str(), O_RDONLY);
      got[i].resize(kMiB);
      ssize_t n = f < 0 ? -1 : ::pread(f, got[i].data(), kMiB, off_t(i * kMiB));
      got[i].resize(n < 0 ? 0 : size_t(n));
      if (f >= 0) ::close(f);
    });
  }
  readers.emplace_back([&] { got[6] = Slurp(c.mnt + "/tokenizer/vocab a+b.txt"); });
  for (std::thread& t : readers) t.join();
  for (size_t i = 0; i < 6; ++i) CHECK(got[i] == shard.substr(i * kMiB, kMiB));
  CHECK(got[6] == Slurp(c.ckpt + "/tokenizer/vocab a+b.txt"));
  CHECK(Slurp(path) == shard);

  // An agent that stops answering (not gone) is bounded too.
  ::kill(c.agents[0]->pid(), SIGSTOP);
  fd = ::open((c.mnt + "/tokenizer/merges.txt").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  const auto stalled = Clock::now();
  errno = 0;
  CHECK(::pread(fd, buf, sizeof(buf), 0) == -1);
  CHECK(errno == EIO);
  const auto waited = Clock::now() - stalled;
  CHECK(waited >= std::chrono::milliseconds(1900));
  CHECK(waited < std::chrono::seconds(6));
  ::close(fd);
  ::kill(c.agents[0]->pid(), SIGCONT);

  // An agent stopped while the mount holds chunks of its cache stops
  // cleanly, and the mount reads again once it is back.
  const pid_t agent = c.agents[0]->pid();
  ::kill(agent, SIGTERM);
  int status = 0;
  REQUIRE(::waitpid(agent, &status, 0) == agent);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  c.agents[0]->Start();
  CHECK(Slurp(c.mnt + "/tokenizer/merges.txt") == Slurp(c.ckpt + "/tokenizer/merges.txt"));

  // fusermount3 -u ends the mount's process, cleanly.
  ProcessResult u = RunProcess({"/usr/bin/fusermount3", "-u", c.mnt});
  INFO(u.err);
  CHECK(u.exit_code == 0);
  CHECK(WaitProcess(c.mount_pid) == 0);
  c.mount_pid = -1;
  CHECK(!Mounted(c.mnt));
}

TEST_CASE("numpy maps a tensor of a mounted safetensors file, as a loader does", "[mount]") {
  MountCluster c;
  // Two F32 tensors of arange(n) * 0.5; the big one spans four 1 MiB pieces.
  std::string header = R"({"__metadata__":{"format":"pt"},"bias":{"dtype":"F32","shape":[4096],)"
                       R"("data_offsets":[0,16384]},"embed":{"dtype":"F32","shape":[1024,768],)"
                       R"("data_offsets":[16384,3162112]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string dir = c.tmp / "st";
  fs::create_directories(dir);
  {
    std::ofstream out(dir + "/model.safetensors", std::ios::binary);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);  // little-endian, as x86-64 is
    out << header;
    for (size_t count : {size_t(4096), size_t(1024 * 768)}) {
      for (size_t i = 0; i < count; ++i) {
        const float v = static_cast<float>(i) * 0.5f;
        out.write(reinterpret_cast<const char*>(&v), sizeof(v));
      }
    }
  }
  c.PublishOk(dir, "team-a/st", -1);
  c.StartMount("team-a/st:latest");
  for (const char* tensor : {"embed", "bias"}) {
    ProcessResult r = RunProcess(
        {"/usr/bin/python3", SHOAL_MOUNT_SAFETENSORS, c.mnt + "/model.safetensors", tensor, "0.5"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == (std::string(tensor) == "embed" ? "ok 1024x768\n" : "ok 4096\n"));
  }
  CHECK(c.StopMount(SIGINT) == 0);
  CHECK(!Mounted(c.mnt));
}

TEST_CASE("a mount reads nothing more once its token expires or is revoked", "[mount][tokens]") {
  MountCluster c;
  const std::string shard = c.mnt + "/model-00001-of-00001.safetensors";
  char buf[4096];

  const std::string brief = c.tracker.MintToken("team-a", "read", "brief-pod", "4s");
  const auto minted = Clock::now();
  c.StartMount("team-a/llama", {}, brief);
  CHECK(Slurp(c.mnt + "/config.json") == Slurp(c.ckpt + "/config.json"));
  std::this_thread::sleep_until(minted + std::chrono::seconds(5));
  int fd = ::open(shard.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  errno = 0;
  CHECK(::pread(fd, buf, sizeof(buf), 0) == -1);
  CHECK(errno == EIO);
  ::close(fd);
  CHECK(c.StopMount(SIGTERM) == 0);
  CHECK(Slurp(c.tmp / "mount.log").find("brief-pod") != std::string::npos);  // says whose

  const std::string admin = c.tracker.MintToken("*", "admin", "alice");
  const std::string pod = c.tracker.MintToken("team-a", "read", "pod-1");
  c.StartMount("team-a/llama", {}, pod);
  fd = ::open(shard.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK(::pread(fd, buf, sizeof(buf), 0) == static_cast<ssize_t>(sizeof(buf)));
  ProcessResult revoked = RunProcess(
      {TrackerBinary(), "token", "revoke", "--id", shoal::PeekTokenClaims(pod)->id, "--tracker",
       "http://127.0.0.1:" + std::to_string(c.tracker.http_port()), "--token", admin});
  INFO(revoked.err);
  REQUIRE(revoked.exit_code == 0);
  // The agent hears of it with its next heartbeat.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  errno = 0;
  CHECK(::pread(fd, buf, sizeof(buf), 3 * kMiB) == -1);
  CHECK(errno == EIO);
  ::close(fd);
  CHECK(c.StopMount(SIGTERM) == 0);
}
