#include "shoal/hash_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "shoal/piece_hasher.h"

using namespace shoal;

namespace {
void Write(const std::string& path, char fill) {
  std::ofstream(path, std::ios::binary) << std::string(100000, fill);
}
}  // namespace

TEST_CASE("the hash cache answers for unchanged files and misses any rewrite", "[hash_cache]") {
  std::string dir = "/tmp/shoal-hash-cache-" + std::to_string(std::random_device{}());
  auto cache = HashCache::Open(dir + "/db");
  REQUIRE(cache.ok());
  std::string file = dir + "/f.bin";
  Write(file, 'a');
  HashOptions opts;
  opts.piece_size = 16384;
  auto h = HashFiles({file}, opts);
  REQUIRE(h.ok());
  (*cache)->Put(file, 16384, (*h)[0]);

  auto hit = (*cache)->Get(file, 16384);
  REQUIRE(hit);
  CHECK(hit->pieces_root == (*h)[0].pieces_root);
  CHECK(hit->piece_layer == (*h)[0].piece_layer);
  CHECK_FALSE((*cache)->Get(file, 65536));  // another piece size is another entry

  // Same size, and the old mtime put back: the ctime still changes.
  struct stat before;
  REQUIRE(::stat(file.c_str(), &before) == 0);
  Write(file, 'b');
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
  CHECK_FALSE((*cache)->Get(file, 16384));
  std::filesystem::remove_all(dir);
}
