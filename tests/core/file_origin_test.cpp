#include "shoal/file_origin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/store_test_support.h"
#include "shoal/origin.h"
#include "shoal/origin_fetch.h"
#include "shoal/sha256.h"

using namespace shoal;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/shoal-file-origin-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string path;
};

std::unique_ptr<Origin> Open(const TempDir& dir) {
  OriginOptions o;
  o.url = "file://" + dir.path + "/origin";
  auto r = OpenOrigin(o);
  REQUIRE(r.ok());
  return std::move(r).value();
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

std::string GetAll(Origin& o, const std::string& key, uint64_t off = 0,
                   uint64_t len = Origin::kToEnd) {
  StringSink sink;
  Status s = o.Get(key, off, len, sink);
  REQUIRE(s.ok());
  return sink.str();
}

}  // namespace

TEST_CASE("file origin round-trips objects and ranges", "[origin][file]") {
  TempDir dir;
  auto origin = Open(dir);
  const std::string data = "0123456789abcdefghij";
  REQUIRE(origin->Put("models/a/b.bin", Bytes(data), data.size()).ok());
  CHECK(GetAll(*origin, "models/a/b.bin") == data);
  CHECK(GetAll(*origin, "models/a/b.bin", 5, 3) == "567");
  CHECK(GetAll(*origin, "models/a/b.bin", 18) == "ij");
  auto head = origin->Head("models/a/b.bin");
  REQUIRE(head.ok());
  CHECK(head->size == data.size());

  StringSink sink;
  Status past = origin->Get("models/a/b.bin", 15, 10, sink);
  CHECK(past.code() == Status::Code::kInvalidArgument);
  CHECK(origin->Head("models/missing").status().IsNotFound());
  CHECK(origin->Get("models/missing", 0, 1, sink).IsNotFound());

  auto c = origin->counters();
  CHECK(c.put.requests == 1);
  CHECK(c.put.bytes == data.size());
  CHECK(c.get.bytes == data.size() + 3 + 2);
}

TEST_CASE("file origin refuses keys that could escape its folder", "[origin][file]") {
  TempDir dir;
  auto origin = Open(dir);
  const std::string x = "x";
  const std::vector<std::string> hostile = {
      "../escape", "a/../../escape", "/etc/passwd",          "a//b",          "./a", "a/.",
      "",          "a\\b",           std::string("a\0b", 3), "a/.shoal-tmp-1"};
  for (const std::string& key : hostile) {
    Status s = origin->Put(key, Bytes(x), 1);
    CHECK(s.code() == Status::Code::kInvalidArgument);
    StringSink sink;
    CHECK(origin->Get(key, 0, 1, sink).code() == Status::Code::kInvalidArgument);
    CHECK(origin->Delete(key).code() == Status::Code::kInvalidArgument);
  }
  struct stat st;
  CHECK(::stat((dir.path + "/escape").c_str(), &st) != 0);
  auto page = origin->List("", "", 1000);
  REQUIRE(page.ok());
  CHECK(page->objects.empty());
}

TEST_CASE("file origin lists a prefix in pages and skips temporary files", "[origin][file]") {
  TempDir dir;
  auto origin = Open(dir);
  for (int i = 0; i < 7; ++i) {
    std::string key = "chunks/" + std::to_string(i);
    REQUIRE(origin->Put(key, Bytes(key), key.size()).ok());
  }
  REQUIRE(origin->Put("other/z", Bytes(std::string("z")), 1).ok());
  std::ofstream(dir.path + "/origin/chunks/.shoal-tmp-99-1") << "partial";

  std::vector<std::string> keys;
  std::string token;
  int pages = 0;
  do {
    auto page = origin->List("chunks/", token, 3);
    REQUIRE(page.ok());
    for (const auto& o : page->objects) keys.push_back(o.key);
    token = page->next_token;
    ++pages;
  } while (!token.empty());
  CHECK(pages == 3);
  CHECK(keys == std::vector<std::string>{"chunks/0", "chunks/1", "chunks/2", "chunks/3", "chunks/4",
                                         "chunks/5", "chunks/6"});
  CHECK(origin->List("chunks/", "", 0).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("file origin replaces objects atomically and deletes idempotently", "[origin][file]") {
  TempDir dir;
  auto origin = Open(dir);
  REQUIRE(origin->Put("k", Bytes(std::string("old")), 3).ok());
  REQUIRE(origin->Put("k", Bytes(std::string("newer")), 5).ok());
  CHECK(GetAll(*origin, "k") == "newer");
  REQUIRE(origin->Delete("k").ok());
  CHECK(origin->Delete("k").ok());
  CHECK(origin->Head("k").status().IsNotFound());
}

TEST_CASE("chunks go under chunks/<hex> and are uploaded once", "[origin][file]") {
  TempDir dir;
  auto origin = Open(dir);
  const std::string data(100000, 'q');
  ChunkId id = ChunkId::From(Sha256::Of(data.data(), data.size()));
  CHECK(ChunkKey(id) == "chunks/" + id.ToHex());
  bool uploaded = false;
  REQUIRE(PutChunkIfAbsent(*origin, id, Bytes(data), data.size(), &uploaded).ok());
  CHECK(uploaded);
  REQUIRE(PutChunkIfAbsent(*origin, id, Bytes(data), data.size(), &uploaded).ok());
  CHECK_FALSE(uploaded);
  CHECK(origin->counters().put.requests == 1);
  CHECK(GetAll(*origin, ChunkKey(id)) == data);
}

TEST_CASE("a chunk fetched from the origin counts its bytes as they arrive, a held one none",
          "[origin][file]") {
  TempDir dir;
  auto origin = Open(dir);
  auto store = testing::OpenOrDie(testing::TestOptions(dir.path + "/store", 64 << 20));
  testing::TestChunk c = testing::MakeChunk(7, 300000);
  bool uploaded = false;
  REQUIRE(PutChunkIfAbsent(*origin, c.id, c.data.data(), c.data.size(), &uploaded).ok());
  std::atomic<uint64_t> streamed{0};
  auto sent = FetchChunkFromOrigin(*origin, *store, c.id, c.data.size(), {}, &streamed);
  REQUIRE(sent.ok());
  CHECK(*sent == c.data.size());
  CHECK(streamed == c.data.size());
  sent = FetchChunkFromOrigin(*origin, *store, c.id, c.data.size(), {}, &streamed);
  REQUIRE(sent.ok());
  CHECK(*sent == 0);
  CHECK(streamed == c.data.size());
  // Bytes that arrived count even when the chunk is then refused.
  testing::TestChunk other = testing::MakeChunk(8, 300000);
  REQUIRE(origin->Put(ChunkKey(other.id), c.data.data(), c.data.size()).ok());
  sent = FetchChunkFromOrigin(*origin, *store, other.id, c.data.size(), {}, &streamed);
  CHECK(sent.status().code() == Status::Code::kCorruption);
  CHECK(streamed == 2 * c.data.size());
}

TEST_CASE("file origin streams a file in with PutFile", "[origin][file]") {
  TempDir dir;
  auto origin = Open(dir);
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  std::ofstream(dir.path + "/src.bin", std::ios::binary) << big;
  REQUIRE(PutFile(*origin, "big/file", dir.path + "/src.bin").ok());
  CHECK(GetAll(*origin, "big/file") == big);
  CHECK(PutFile(*origin, "big/nope", dir.path + "/absent").IsNotFound());
}

TEST_CASE("origin options reject malformed URLs and ranges", "[origin]") {
  OriginOptions o;
  o.url = "ftp://x";
  CHECK_FALSE(o.Validate().ok());
  o.url = "s3://";
  CHECK_FALSE(o.Validate().ok());
  o.url = "s3://bucket/prefix";
  CHECK(o.Validate().ok());
  o.part_size = 1 << 20;
  CHECK_FALSE(o.Validate().ok());
  o = OriginOptions();
  o.url = "file://relative/path";
  CHECK_FALSE(OpenOrigin(o).ok());
}
