#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/store_test_support.h"
#include "shoal/piece_hasher.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

constexpr uint32_t kPiece = 64 * 1024;

// Puts the chunks of `data`, cut in kPiece pieces, and returns their IDs.
std::vector<ChunkId> PutFile(ChunkStore& store, const std::vector<uint8_t>& data) {
  FileHashes h = HashBuffer(data.data(), data.size(), kPiece);
  std::vector<ChunkId> ids = FileChunkIds(h);
  for (size_t i = 0; i < ids.size(); ++i) {
    size_t off = i * kPiece;
    size_t len = std::min<size_t>(kPiece, data.size() - off);
    REQUIRE(store.Put(ids[i], data.data() + off, len).ok());
  }
  return ids;
}

}  // namespace

TEST_CASE("materialize assembles a file from its chunks, read-only", "[store][materialize]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  std::vector<uint8_t> data = MakeChunk(1, 3 * kPiece + 12345).data;
  std::vector<ChunkId> ids = PutFile(*store, data);
  REQUIRE(ids.size() == 4);

  std::string target = dir.path() + "/models/llama/weights.bin";
  REQUIRE(store->Materialize(ids, data.size(), kPiece, target, 0755).ok());
  CHECK((ReadWholeFile(target) == data));
  struct stat st;
  REQUIRE(::stat(target.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0555);
  CHECK(FilesUnder(dir.path() + "/models/llama").size() == 1);  // no temporary left
  CHECK(store->Stats().bytes_out == data.size());
  CHECK(store->Stats().pinned_chunks == 0);
}

TEST_CASE("materialize handles a single-chunk file and an empty file", "[store][materialize]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  std::vector<uint8_t> small = MakeChunk(2, 1000).data;
  std::vector<ChunkId> ids = PutFile(*store, small);
  REQUIRE(ids.size() == 1);
  REQUIRE(store->Materialize(ids, small.size(), kPiece, dir.path() + "/small", 0600).ok());
  CHECK((ReadWholeFile(dir.path() + "/small") == small));
  REQUIRE(store->Materialize({}, 0, kPiece, dir.path() + "/empty", 0644).ok());
  CHECK(ReadWholeFile(dir.path() + "/empty").empty());
}

TEST_CASE("materialize onto another filesystem falls back to plain copies",
          "[store][materialize]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  std::vector<uint8_t> data = MakeChunk(3, 2 * kPiece + 1).data;
  std::vector<ChunkId> ids = PutFile(*store, data);
  char tmpl[] = "/dev/shm/shoal-materialize-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::string target = std::string(tmpl) + "/file";
  Status s = store->Materialize(ids, data.size(), kPiece, target, 0644);
  CHECK(s.ok());
  CHECK((ReadWholeFile(target) == data));
  TempDir::RemoveTree(tmpl);
}

TEST_CASE("materialize with a chunk missing writes nothing and says what to do",
          "[store][materialize]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  std::vector<uint8_t> data = MakeChunk(4, 2 * kPiece).data;
  std::vector<ChunkId> ids = PutFile(*store, data);
  REQUIRE(store->Evict(ids[1]).ok());
  std::string target = dir.path() + "/out/file";
  Status s = store->Materialize(ids, data.size(), kPiece, target, 0644);
  CHECK(s.IsNotFound());
  CHECK_THAT(s.message(), Catch::Contains("chunk 1 of 2"));
  CHECK_THAT(s.message(), Catch::Contains("pull it first"));
  CHECK(::access(target.c_str(), F_OK) != 0);
  CHECK(store->Stats().pinned_chunks == 0);
}

TEST_CASE("materialize checks that chunks fit the file", "[store][materialize]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  std::vector<uint8_t> data = MakeChunk(5, 2 * kPiece).data;
  std::vector<ChunkId> ids = PutFile(*store, data);
  std::string target = dir.path() + "/file";
  CHECK(store->Materialize(ids, 3 * kPiece, kPiece, target, 0644).code() ==
        Status::Code::kInvalidArgument);
  CHECK(store->Materialize({ids[1], ids[0]}, 2 * kPiece - 5, kPiece, target, 0644).code() ==
        Status::Code::kInvalidArgument);
  CHECK(store->Materialize(ids, data.size(), 1000, target, 0644).code() ==
        Status::Code::kInvalidArgument);
  CHECK(::access(target.c_str(), F_OK) != 0);
}
