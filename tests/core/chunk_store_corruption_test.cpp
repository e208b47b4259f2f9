#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <mutex>

#include "core/store_test_support.h"
#include "shoal/piece_hasher.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

// Flips one byte of a file in place, keeping its size.
void FlipByte(const std::string& path, off_t offset) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  uint8_t b = 0;
  REQUIRE(::pread(fd, &b, 1, offset) == 1);
  b ^= 0x40;
  REQUIRE(::pwrite(fd, &b, 1, offset) == 1);
  ::close(fd);
}

}  // namespace

TEST_CASE("a chunk altered on disk is caught on its first read after open and dropped",
          "[store][corruption]") {
  TempDir dir;
  std::vector<ChunkId> dropped;
  std::mutex mu;
  StoreOptions options = TestOptions(dir.path(), 64 << 20);
  options.on_evict = [&](const ChunkId& id) {
    std::lock_guard<std::mutex> l(mu);
    dropped.push_back(id);
  };
  TestChunk good = MakeChunk(1, 5 * kBlockSize), bad = MakeChunk(2, 5 * kBlockSize);
  {
    auto store = OpenOrDie(options);
    REQUIRE(store->Put(good.id, good.data.data(), good.data.size()).ok());
    REQUIRE(store->Put(bad.id, bad.data.data(), bad.data.size()).ok());
  }
  FlipByte(ChunkPathIn(dir.path(), bad.id), 4 * kBlockSize + 3);

  auto store = OpenOrDie(options);
  std::vector<uint8_t> buf(100);
  // The damage is in the last block; a read of the first must still fail.
  auto n = store->Read(bad.id, 0, buf.data(), buf.size());
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().IsCorruption());
  CHECK_THAT(n.status().message(), Catch::Contains("fetch it again"));
  CHECK_FALSE(store->Contains(bad.id));
  CHECK(store->Read(bad.id, 0, buf.data(), buf.size()).status().IsNotFound());
  CHECK(::access(ChunkPathIn(dir.path(), bad.id).c_str(), F_OK) != 0);
  CHECK(store->Stats().corrupt_dropped == 1);
  CHECK(dropped == std::vector<ChunkId>{bad.id});
  CHECK((*ReadAll(*store, good.id) == good.data));

  // Gone from the index too.
  store.reset();
  store = OpenOrDie(options);
  CHECK_FALSE(store->Contains(bad.id));
  CHECK(store->Contains(good.id));
}

TEST_CASE("an altered chunk is never handed out as a span or materialized", "[store][corruption]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 64 << 20);
  TestChunk a = MakeChunk(3, 2 * kBlockSize), b = MakeChunk(4, 2 * kBlockSize);
  {
    auto store = OpenOrDie(options);
    REQUIRE(store->Put(a.id, a.data.data(), a.data.size()).ok());
    REQUIRE(store->Put(b.id, b.data.data(), b.data.size()).ok());
  }
  FlipByte(ChunkPathIn(dir.path(), a.id), 0);
  FlipByte(ChunkPathIn(dir.path(), b.id), 0);
  auto store = OpenOrDie(options);
  CHECK(store->OpenSpan(a.id, 0, 10).status().IsCorruption());
  std::string target = dir.path() + "/out/file";
  Status s = store->Materialize({b.id}, b.data.size(), 1 << 20, target, 0644);
  CHECK(s.IsCorruption());
  CHECK(::access(target.c_str(), F_OK) != 0);
  CHECK(store->Stats().corrupt_dropped == 2);
}

TEST_CASE("verify_on_open drops altered chunks before anyone asks", "[store][corruption]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 64 << 20);
  TestChunk c = MakeChunk(5, 3 * kBlockSize);
  {
    auto store = OpenOrDie(options);
    REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
  }
  FlipByte(ChunkPathIn(dir.path(), c.id), kBlockSize);
  options.verify_on_open = true;
  auto store = OpenOrDie(options);
  CHECK_FALSE(store->Contains(c.id));
  CHECK(store->Stats().corrupt_dropped == 1);
  CHECK(store->Stats().used_bytes == 0);
}

TEST_CASE("a truncated chunk file is dropped at open", "[store][corruption]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 64 << 20);
  TestChunk c = MakeChunk(6, 3 * kBlockSize);
  {
    auto store = OpenOrDie(options);
    REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
  }
  REQUIRE(::truncate(ChunkPathIn(dir.path(), c.id).c_str(), kBlockSize) == 0);
  auto store = OpenOrDie(options);
  CHECK_FALSE(store->Contains(c.id));
  CHECK(store->Stats().corrupt_dropped == 1);
}

TEST_CASE("a file under a chunk's name with other bytes is not indexed", "[store][corruption]") {
  TempDir dir;
  TestChunk c = MakeChunk(7, 2 * kBlockSize), other = MakeChunk(8, 2 * kBlockSize);
  WriteWholeFile(ChunkPathIn(dir.path(), c.id), other.data);
  WriteWholeFile(dir.path() + "/chunks/zz/not-a-chunk", {1});
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  CHECK_FALSE(store->Contains(c.id));
  CHECK(store->Stats().corrupt_dropped == 1);
  CHECK(store->Stats().open_garbage_removed == 1);
  CHECK(FilesUnder(dir.path() + "/chunks").empty());
}

TEST_CASE("Verify re-hashes a chunk that was damaged while the store ran", "[store][corruption]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(9, 2 * kBlockSize);
  REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
  CHECK(store->Verify(c.id).ok());
  FlipByte(ChunkPathIn(dir.path(), c.id), 7);
  CHECK(store->Verify(c.id).IsCorruption());
  CHECK_FALSE(store->Contains(c.id));
}

TEST_CASE("a chunk file altered while the store runs is hashed again before it is read",
          "[store][corruption]") {
  // A peer must never be sent bytes that fail the piece hash (see HashPiece
  // in agent/p2p/chunk_piece_jobs.cpp), so a file written over after it was
  // stored or checked is not trusted on the strength of that check.
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk written = MakeChunk(10, 3 * kBlockSize), read = MakeChunk(11, 3 * kBlockSize),
            spanned = MakeChunk(12, 2 * kBlockSize);
  REQUIRE(store->Put(written.id, written.data.data(), written.data.size()).ok());
  REQUIRE(store->Put(read.id, read.data.data(), read.data.size()).ok());
  REQUIRE(store->Put(spanned.id, spanned.data.data(), spanned.data.size()).ok());
  std::vector<uint8_t> buf(100);
  REQUIRE(store->Read(read.id, 0, buf.data(), buf.size()).ok());  // checked once already

  FlipByte(ChunkPathIn(dir.path(), written.id), 2 * kBlockSize + 1);
  FlipByte(ChunkPathIn(dir.path(), read.id), 5);
  FlipByte(ChunkPathIn(dir.path(), spanned.id), kBlockSize);
  CHECK(store->Read(written.id, 0, buf.data(), buf.size()).status().IsCorruption());
  CHECK(store->Read(read.id, 0, buf.data(), buf.size()).status().IsCorruption());
  CHECK(store->OpenSpan(spanned.id, 0, 10).status().IsCorruption());
  CHECK(store->Stats().corrupt_dropped == 3);
  CHECK(store->Stats().chunks == 0);
}

TEST_CASE("reading a chunk leaves its file's change time alone, so reads do not re-hash it",
          "[store][corruption]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(13, 2 * kBlockSize);
  REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
  std::string path = ChunkPathIn(dir.path(), c.id);
  struct stat before;
  REQUIRE(::stat(path.c_str(), &before) == 0);
  std::vector<uint8_t> buf(c.data.size());
  for (int i = 0; i < 3; ++i) {
    auto n = store->Read(c.id, 0, buf.data(), buf.size());
    REQUIRE(n.ok());
    CHECK(buf == c.data);
  }
  // Reading changes nothing the store watches.
  struct stat after;
  REQUIRE(::stat(path.c_str(), &after) == 0);
  CHECK(after.st_ctim.tv_sec == before.st_ctim.tv_sec);
  CHECK(after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
  CHECK(store->Stats().corrupt_dropped == 0);
}
