// What the chunk store tests share: deterministic test chunks, a temporary
// folder that cleans up after itself, and a look at the files on disk.
#ifndef SHOAL_TESTS_CORE_STORE_TEST_SUPPORT_H_
#define SHOAL_TESTS_CORE_STORE_TEST_SUPPORT_H_

#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "shoal/chunk_hash.h"
#include "shoal/chunk_store.h"
#include "shoal/merkle.h"

namespace shoal {
namespace testing {

struct TestChunk {
  std::vector<uint8_t> data;
  ChunkId id;
};

// `size` pseudo-random bytes from `seed`, named as a single-piece file
// names its chunk (leaves padded to the next power of two), or, with
// `piece_size`, as a piece of a larger file (padded to piece_size / 16 KiB).
inline TestChunk MakeChunk(uint64_t seed, size_t size, uint32_t piece_size = 0) {
  TestChunk c;
  c.data.resize(size);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < size; i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    uint64_t v = x * 0x2545f4914f6cdd1dull;
    for (size_t j = 0; j < 8 && i + j < size; ++j)
      c.data[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  uint64_t width = piece_size != 0 ? piece_size / kBlockSize : NextPowerOfTwo(BlockCount(size));
  c.id = ComputeChunkId(c.data.data(), c.data.size(), width);
  return c;
}

// A fresh folder under /tmp, deleted with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/shoal-store-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { RemoveTree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

  static void RemoveTree(const std::string& path) {
    ::nftw(
        path.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }

 private:
  std::string path_;
};

// Regular files under `dir`, recursively.
inline std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string p = dir + "/" + name;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      auto sub = FilesUnder(p);
      out.insert(out.end(), sub.begin(), sub.end());
    } else {
      out.push_back(p);
    }
  }
  ::closedir(d);
  return out;
}

inline std::string ChunkPathIn(const std::string& dir, const ChunkId& id) {
  std::string hex = id.ToHex();
  return dir + "/chunks/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex;
}

inline std::vector<uint8_t> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Writes `data` to `path`, creating its folders.
inline void WriteWholeFile(const std::string& path, const std::vector<uint8_t>& data) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    ::mkdir(path.substr(0, slash).c_str(), 0755);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

inline StoreOptions TestOptions(const std::string& dir, uint64_t capacity) {
  StoreOptions o;
  o.dir = dir;
  o.capacity_bytes = capacity;
  o.sync = false;  // tests that are about durability turn it back on
  return o;
}

inline std::unique_ptr<ChunkStore> OpenOrDie(const StoreOptions& options) {
  auto s = ChunkStore::Open(options);
  if (!s.ok()) {
    throw std::runtime_error("open store: " + s.status().ToString());
  }
  return std::move(*s);
}

// Reads the whole chunk through the store.
inline Result<std::vector<uint8_t>> ReadAll(ChunkStore& store, const ChunkId& id) {
  auto size = store.Size(id);
  if (!size.ok()) return size.status();
  std::vector<uint8_t> buf(*size);
  auto n = store.Read(id, 0, buf.data(), buf.size());
  if (!n.ok()) return n.status();
  buf.resize(*n);
  return buf;
}

}  // namespace testing
}  // namespace shoal

#endif  // SHOAL_TESTS_CORE_STORE_TEST_SUPPORT_H_
