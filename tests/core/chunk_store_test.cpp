#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "core/store_test_support.h"
#include "shoal/piece_hasher.h"

using namespace shoal;
using namespace shoal::testing;

TEST_CASE("chunk store keeps a put chunk and reads any range of it", "[store]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 64 << 20);
  options.sync = true;
  auto store = OpenOrDie(options);
  TestChunk c = MakeChunk(1, 3 * kBlockSize + 100);

  REQUIRE_FALSE(store->Contains(c.id));
  REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
  CHECK(store->Contains(c.id));
  CHECK((ReadWholeFile(ChunkPathIn(dir.path(), c.id)) == c.data));

  std::vector<uint8_t> buf(5000);
  auto n = store->Read(c.id, 20000, buf.data(), buf.size());
  REQUIRE(n.ok());
  REQUIRE(*n == 5000);
  CHECK(std::equal(buf.begin(), buf.end(), c.data.begin() + 20000));
  n = store->Read(c.id, c.data.size() - 10, buf.data(), buf.size());
  REQUIRE(n.ok());
  CHECK(*n == 10);

  StoreStats s = store->Stats();
  CHECK(s.chunks == 1);
  CHECK(s.used_bytes == c.data.size());
  CHECK(s.bytes_in == c.data.size());
  CHECK(s.bytes_out == 5010);
  CHECK(s.hits == 2);
}

TEST_CASE("chunk store names a piece of a larger file by its piece hash", "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  // The last, short piece of a file cut into 1 MiB pieces: its tree is
  // padded to 64 leaves, not to the 4 its blocks would need alone.
  TestChunk c = MakeChunk(2, 3 * kBlockSize, 1 << 20);
  CHECK(store->Put(c.id, c.data.data(), c.data.size()).ok());
  CHECK(store->Contains(c.id));
}

TEST_CASE("chunk store rejects bytes that do not match the ID and leaves nothing", "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(3, 2 * kBlockSize);
  TestChunk other = MakeChunk(4, 2 * kBlockSize);

  Status s = store->Put(c.id, other.data.data(), other.data.size());
  CHECK(s.IsCorruption());
  CHECK_THAT(s.message(), Catch::Contains(c.id.ToHex()));
  CHECK_FALSE(store->Contains(c.id));
  CHECK(FilesUnder(dir.path() + "/chunks").empty());
  CHECK(FilesUnder(dir.path() + "/tmp").empty());
  CHECK(store->Stats().reserved_bytes == 0);
  CHECK(store->Stats().write_failures == 1);
}

TEST_CASE("a streaming writer takes blocks out of order and commits without reading back",
          "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(5, 5 * kBlockSize + 7);
  auto w = store->BeginWrite(c.id, c.data.size());
  REQUIRE(w.ok());
  for (uint64_t b : {4, 0, 5, 2, 1, 3}) {
    uint64_t off = b * kBlockSize;
    size_t len = std::min<size_t>(kBlockSize, c.data.size() - off);
    REQUIRE((*w)->WriteAt(off, c.data.data() + off, len).ok());
  }
  auto h = (*w)->BlockHash(5);
  REQUIRE(h.ok());
  CHECK(*h == HashBlocks(c.data.data(), c.data.size())[5]);
  CHECK_FALSE(store->Contains(c.id));  // not visible before commit
  REQUIRE((*w)->Commit().ok());
  auto back = ReadAll(*store, c.id);
  REQUIRE(back.ok());
  CHECK((*back == c.data));
}

TEST_CASE("a writer refuses to commit with blocks missing and a bad block can be rewritten",
          "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(6, 4 * kBlockSize);
  auto w = store->BeginWrite(c.id, c.data.size());
  REQUIRE(w.ok());
  REQUIRE((*w)->WriteAt(0, c.data.data(), 2 * kBlockSize).ok());
  Status s = (*w)->Commit();
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("offset 32768"));

  std::vector<uint8_t> bad(c.data.begin() + 2 * kBlockSize, c.data.end());
  bad[100] ^= 1;               // block 2
  bad[kBlockSize + 100] ^= 1;  // block 3
  REQUIRE((*w)->WriteAt(2 * kBlockSize, bad.data(), bad.size()).ok());
  CHECK((*w)->Commit().IsCorruption());
  REQUIRE((*w)->WriteAt(2 * kBlockSize, c.data.data() + 2 * kBlockSize, kBlockSize).ok());
  CHECK((*w)->Commit().IsCorruption());  // block 3 is still bad
  REQUIRE((*w)->WriteAt(3 * kBlockSize, c.data.data() + 3 * kBlockSize, kBlockSize).ok());
  CHECK((*w)->Commit().ok());
  CHECK(store->Contains(c.id));
  CHECK((*w)->WriteAt(0, c.data.data(), kBlockSize).code() == Status::Code::kInvalidArgument);
}

TEST_CASE("a writer dropped before commit leaves no file and frees its reservation", "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(7, 4 * kBlockSize);
  {
    auto w = store->BeginWrite(c.id, c.data.size());
    REQUIRE(w.ok());
    REQUIRE((*w)->WriteAt(0, c.data.data(), kBlockSize).ok());
    CHECK(store->Stats().reserved_bytes == c.data.size());
    CHECK(FilesUnder(dir.path() + "/tmp").size() == 1);
  }
  CHECK(FilesUnder(dir.path() + "/tmp").empty());
  CHECK(store->Stats().reserved_bytes == 0);
  CHECK_FALSE(store->Contains(c.id));
}

TEST_CASE("a writer rejects writes that do not cover whole blocks", "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(8, 2 * kBlockSize);
  auto w = store->BeginWrite(c.id, c.data.size());
  REQUIRE(w.ok());
  CHECK_FALSE((*w)->WriteAt(1, c.data.data(), kBlockSize).ok());
  CHECK_FALSE((*w)->WriteAt(0, c.data.data(), 100).ok());
  CHECK_FALSE((*w)->WriteAt(kBlockSize, c.data.data(), 2 * kBlockSize).ok());
  CHECK(store->BeginWrite(c.id, 0).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("put with precomputed block hashes checks them against the ID", "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(9, 3 * kBlockSize);
  std::vector<Digest> leaves = HashBlocks(c.data.data(), c.data.size());
  std::vector<Digest> wrong = leaves;
  wrong[1] = leaves[0];
  CHECK(store->PutHashed(c.id, c.data.data(), c.data.size(), wrong).IsCorruption());
  CHECK_FALSE(store->Contains(c.id));
  REQUIRE(store->PutHashed(c.id, c.data.data(), c.data.size(), leaves).ok());
  CHECK((*ReadAll(*store, c.id) == c.data));
}

TEST_CASE("a second put of a chunk is a no-op that succeeds", "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(10, kBlockSize);
  REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
  REQUIRE(store->Put(c.id, c.data.data(), c.data.size(), {/*owned=*/true}).ok());
  CHECK(store->Stats().chunks == 1);
  CHECK(store->Stats().owned_chunks == 1);
  CHECK(store->BeginWrite(c.id, c.data.size()).status().code() == Status::Code::kAlreadyExists);
}

TEST_CASE("a span hands out the chunk file for sendfile and pins it", "[store]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(11, 4 * kBlockSize);
  REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
  auto span = store->OpenSpan(c.id, 1000, 20000);
  REQUIRE(span.ok());
  CHECK(span->length() == 20000);
  CHECK(store->Stats().pinned_chunks == 1);
  CHECK(store->Evict(c.id).code() == Status::Code::kUnavailable);

  std::string out_path = dir.path() + "/sent";
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(out >= 0);
  off_t off = static_cast<off_t>(span->offset());
  REQUIRE(::sendfile(out, span->fd(), &off, span->length()) == 20000);
  ::close(out);
  std::vector<uint8_t> sent = ReadWholeFile(out_path);
  CHECK(std::equal(sent.begin(), sent.end(), c.data.begin() + 1000));

  *span = ChunkSpan();
  CHECK(store->Stats().pinned_chunks == 0);
  CHECK(store->Evict(c.id).ok());
  CHECK(store->OpenSpan(c.id, 0, 1).status().IsNotFound());
}

TEST_CASE("a reopened store keeps its chunks, ownership and LRU order", "[store]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 64 << 20);
  TestChunk a = MakeChunk(12, kBlockSize), b = MakeChunk(13, kBlockSize);
  {
    auto store = OpenOrDie(options);
    REQUIRE(store->Put(a.id, a.data.data(), a.data.size()).ok());
    REQUIRE(store->Put(b.id, b.data.data(), b.data.size()).ok());
    REQUIRE(store->SetOwned(b.id, true).ok());
  }
  auto store = OpenOrDie(options);
  StoreStats s = store->Stats();
  CHECK(s.chunks == 2);
  CHECK(s.owned_chunks == 1);
  CHECK(s.open_unindexed_added == 0);
  CHECK((*ReadAll(*store, a.id) == a.data));
  CHECK(store->SetOwned(MakeChunk(99, 10).id, true).IsNotFound());
}

TEST_CASE("open removes temporary files, drops records of missing files and indexes strays",
          "[store]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 64 << 20);
  TestChunk kept = MakeChunk(14, kBlockSize), lost = MakeChunk(15, kBlockSize);
  TestChunk stray = MakeChunk(16, 2 * kBlockSize);
  {
    auto store = OpenOrDie(options);
    REQUIRE(store->Put(kept.id, kept.data.data(), kept.data.size()).ok());
    REQUIRE(store->Put(lost.id, lost.data.data(), lost.data.size()).ok());
  }
  REQUIRE(::unlink(ChunkPathIn(dir.path(), lost.id).c_str()) == 0);
  // A chunk file whose index record was never written (a crash right after
  // the rename), and a temporary file from a write that never committed.
  WriteWholeFile(ChunkPathIn(dir.path(), stray.id), stray.data);
  WriteWholeFile(dir.path() + "/tmp/half-written", {1, 2, 3});

  auto store = OpenOrDie(options);
  StoreStats s = store->Stats();
  CHECK(s.open_temp_removed == 1);
  CHECK(s.open_missing_dropped == 1);
  CHECK(s.open_unindexed_added == 1);
  CHECK(s.corrupt_dropped == 0);
  CHECK(s.chunks == 2);
  CHECK(store->Contains(kept.id));
  CHECK(store->Contains(stray.id));
  CHECK_FALSE(store->Contains(lost.id));
  CHECK(FilesUnder(dir.path() + "/tmp").empty());
}

TEST_CASE("a second open of the same cache folder fails clearly", "[store]") {
  TempDir dir;
  auto first = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  auto second = ChunkStore::Open(TestOptions(dir.path(), 64 << 20));
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(second.status().message(), Catch::Contains("another shoald"));
}

TEST_CASE("store options name the bad field", "[store]") {
  StoreOptions o;
  CHECK_THAT(o.Validate().message(), Catch::Contains("cache folder"));
  o.dir = "/tmp/x";
  CHECK_THAT(o.Validate().message(), Catch::Contains("capacity"));
  o.capacity_bytes = 1 << 30;
  CHECK(o.Validate().ok());
  o.low_watermark = 0.99;
  CHECK_THAT(o.Validate().message(), Catch::Contains("watermarks"));
}

TEST_CASE("the cache's index folder is 0700 and its files 0600, also for an older index",
          "[store]") {
  TempDir dir;
  const mode_t old_mask = ::umask(022);  // the common default, which LevelDB's files follow
  auto modes = [&](const std::string& index) {
    std::vector<std::string> wrong;
    struct stat st {};
    if (::stat(index.c_str(), &st) != 0 || (st.st_mode & 0777) != 0700) wrong.push_back(index);
    for (const std::string& path : FilesUnder(index)) {
      if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 0777) != 0600) wrong.push_back(path);
    }
    return wrong;
  };
  const std::string index = dir.path() + "/index";
  {
    auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
    TestChunk c = MakeChunk(7, 3 * kBlockSize);
    REQUIRE(store->Put(c.id, c.data.data(), c.data.size()).ok());
    REQUIRE(store->Flush().ok());
    REQUIRE(!FilesUnder(index).empty());
    CHECK(modes(index).empty());
  }
  // An index an older build left readable by others is narrowed at open.
  REQUIRE(::chmod(index.c_str(), 0755) == 0);
  for (const std::string& path : FilesUnder(index)) REQUIRE(::chmod(path.c_str(), 0644) == 0);
  {
    auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
    CHECK(modes(index).empty());
  }
  ::umask(old_mask);
}
