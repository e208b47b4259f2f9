// Chunk store benchmark (not a test): put and read throughput against dd
// on the same disk in the same run, and the index's memory per entry.
//
//   chunk_store_bench throughput <dir> [total MiB, default 512] [rounds, default 3]
//   chunk_store_bench index <dir> [entries, default 100000]
//
// <dir> must be on the disk to measure; everything is created under it and
// removed afterwards. Page cache is dropped per file with
// posix_fadvise(DONTNEED) before every cold read, for dd and the store alike.
#include <fcntl.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../core/store_test_support.h"
#include "shoal/chunk_store.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = 16u << 20;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void DropCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double TimedShell(const std::string& cmd) {
  auto start = Clock::now();
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  return Seconds(start);
}

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

void Die(const Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  std::exit(1);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Each round runs dd and the store back to back, so both see the same disk
// weather; the medians over rounds are reported.
int Throughput(const std::string& dir, size_t total_mib, int rounds) {
  size_t n = total_mib * (1u << 20) / kChunk;
  double mib = static_cast<double>(n * kChunk) / (1 << 20);
  std::vector<TestChunk> chunks;
  std::vector<std::vector<Digest>> leaves;
  for (size_t i = 0; i < n; ++i) {
    chunks.push_back(MakeChunk(i + 1, kChunk, kChunk));
    leaves.push_back(HashBlocks(chunks.back().data.data(), kChunk));
  }
  std::string src = dir + "/dd-src.bin", out = dir + "/dd-out.bin", store_dir = dir + "/store";
  {
    std::ofstream f(src, std::ios::binary);
    for (auto& c : chunks) f.write(reinterpret_cast<const char*>(c.data.data()), kChunk);
  }
  TimedShell("cat " + src + " > /dev/null");  // source in page cache, as the store's is in RAM

  StoreOptions options;
  options.dir = store_dir;
  options.capacity_bytes = uint64_t{2 * n} * kChunk;  // no evictions
  std::vector<uint8_t> buf(kChunk);
  // Runs fn(i) for every chunk index on `threads` threads.
  auto parallel = [&](int threads, const std::function<void(size_t)>& fn) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        for (size_t i = static_cast<size_t>(t); i < n; i += static_cast<size_t>(threads)) fn(i);
      });
    }
    for (auto& th : ts) th.join();
  };
  auto put_all = [&](bool hashed, int threads) {
    TempDir::RemoveTree(store_dir);
    auto store = ChunkStore::Open(options);
    if (!store.ok()) Die(store.status());
    auto start = Clock::now();
    parallel(threads, [&](size_t i) {
      Status s = hashed
                     ? (*store)->PutHashed(chunks[i].id, chunks[i].data.data(), kChunk, leaves[i])
                     : (*store)->Put(chunks[i].id, chunks[i].data.data(), kChunk);
      if (!s.ok()) Die(s);
    });
    return Seconds(start);
  };
  std::vector<std::vector<uint8_t>> bufs(2, std::vector<uint8_t>(kChunk));
  auto read_all = [&](ChunkStore& st, int threads) {
    for (auto& c : chunks) DropCache(ChunkPathIn(store_dir, c.id));
    auto t = Clock::now();
    parallel(threads, [&](size_t i) {
      auto r = st.Read(chunks[i].id, 0, bufs[i % threads].data(), kChunk);
      if (!r.ok()) Die(r.status());
    });
    return Seconds(t);
  };

  std::string dd_each = "for f in";
  for (auto& c : chunks) dd_each += " " + ChunkPathIn(store_dir, c.id);
  dd_each += "; do dd if=$f of=/dev/null bs=16M status=none; done";
  // dd writing the same chunks as separate files, each fsynced, as the store does.
  std::string dd_write_each;
  for (size_t i = 0; i < n; ++i) {
    dd_write_each += "dd if=" + src + " of=" + dir + "/dd-chunk-" + std::to_string(i) +
                     " bs=16M skip=" + std::to_string(i) + " count=1 conv=fsync status=none && ";
  }
  dd_write_each += "true";
  std::vector<double> dd_write, dd_write_files, put, put2, put_hashed, dd_read, dd_files, read,
      read2, first_read;
  for (int r = 0; r < rounds; ++r) {
    dd_write.push_back(
        TimedShell("dd if=" + src + " of=" + out + " bs=16M conv=fsync status=none"));
    dd_write_files.push_back(TimedShell(dd_write_each));
    TimedShell("rm -f " + dir + "/dd-chunk-*");
    put_hashed.push_back(put_all(true, 1));
    put2.push_back(put_all(false, 2));
    put.push_back(put_all(false, 1));
    DropCache(out);
    dd_read.push_back(TimedShell("dd if=" + out + " of=/dev/null bs=16M status=none"));
    {
      auto store = ChunkStore::Open(options);  // chunks not yet verified in this process
      if (!store.ok()) Die(store.status());
      first_read.push_back(read_all(**store, 1));
      read.push_back(read_all(**store, 1));
      read2.push_back(read_all(**store, 2));
    }
    for (auto& c : chunks) DropCache(ChunkPathIn(store_dir, c.id));
    dd_files.push_back(TimedShell(dd_each));
    ::unlink(out.c_str());
  }
  double w = Median(dd_write), rd = Median(dd_read);
  std::printf(
      "%.0f MiB in %zu chunks of 16 MiB, %d rounds, medians; dd: bs=16M, write with "
      "conv=fsync; cold reads after posix_fadvise(DONTNEED)\n",
      mib, n, rounds);
  std::printf("| operation | dd MiB/s | store MiB/s | store / dd |\n|---|---|---|---|\n");
  auto row = [&](const char* what, double dd, double st) {
    std::printf("| %s | %.0f | %.0f | %.2f |\n", what, mib / dd, mib / st, dd / st);
  };
  row("Put: hash + write + fsync + rename + index", w, Median(put));
  row("Put, 2 threads", w, Median(put2));
  row("PutHashed: block hashes supplied by the caller", w, Median(put_hashed));
  row("Read, cold, chunk already verified", rd, Median(read));
  row("Read, cold, chunk already verified, 2 threads", rd, Median(read2));
  row("Read, cold, first read after open (hashes the chunk)", rd, Median(first_read));
  std::printf(
      "\nThe same against dd run once per 16 MiB chunk file (writes: one fsynced file "
      "per chunk; reads: the store's own chunk files):\n\n");
  std::printf("| operation | dd MiB/s | store MiB/s | store / dd |\n|---|---|---|---|\n");
  double wf = Median(dd_write_files), df = Median(dd_files);
  row("Put: hash + write + fsync + rename + index", wf, Median(put));
  row("Put, 2 threads", wf, Median(put2));
  row("PutHashed: block hashes supplied by the caller", wf, Median(put_hashed));
  row("Read, cold, chunk already verified", df, Median(read));
  row("Read, cold, first read after open (hashes the chunk)", df, Median(first_read));
  TempDir::RemoveTree(store_dir);
  ::unlink(src.c_str());
  return 0;
}

int Index(const std::string& dir, size_t entries) {
  std::string store_dir = dir + "/index-store";
  StoreOptions options;
  options.dir = store_dir;
  options.capacity_bytes = 1ull << 40;
  options.sync = false;
  auto fill_start = Clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    auto store = ChunkStore::Open(options);
    if (!store.ok()) Die(store.status());
    for (size_t i = 0; i < entries; ++i) {
      TestChunk c = MakeChunk(i + 1, 64);
      Status s = (*store)->Put(c.id, c.data.data(), c.data.size());
      if (!s.ok()) Die(s);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  double fill = Seconds(fill_start);

  long before = RssKiB();
  auto open_start = Clock::now();
  auto store = ChunkStore::Open(options);
  if (!store.ok()) Die(store.status());
  double open = Seconds(open_start);
  long after_open = RssKiB();
  ::malloc_trim(0);
  long after_trim = RssKiB();
  size_t chunks = (*store)->Stats().chunks;
  double per_entry = (after_trim - before) * 1024.0 / static_cast<double>(chunks);
  double per_entry_peak = (after_open - before) * 1024.0 / static_cast<double>(chunks);
  const double kEntriesPerTiB = (1ull << 40) / double{kChunk};  // 65,536
  std::printf("index entries: %zu (filled in %.1f s; open with reconcile took %.2f s)\n", chunks,
              fill, open);
  std::printf("RSS before open %ld KiB, after open %ld KiB, after malloc_trim %ld KiB\n", before,
              after_open, after_trim);
  std::printf("per entry: %.0f B (%.0f B before malloc_trim)\n", per_entry, per_entry_peak);
  std::printf("extrapolated per TiB of 16 MiB chunks (%.0f entries): %.1f MiB (%.1f MiB)\n",
              kEntriesPerTiB, per_entry * kEntriesPerTiB / (1 << 20),
              per_entry_peak * kEntriesPerTiB / (1 << 20));
  store->reset();
  TempDir::RemoveTree(store_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s throughput|index <dir> [MiB|entries]\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1], dir = argv[2];
  if (mode == "throughput") {
    return Throughput(dir, argc > 3 ? std::stoul(argv[3]) : 512, argc > 4 ? std::stoi(argv[4]) : 3);
  }
  if (mode == "index") return Index(dir, argc > 3 ? std::stoul(argv[3]) : 100000);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
