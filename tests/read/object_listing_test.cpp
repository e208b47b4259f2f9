#include "read/object_listing.h"

#include <catch2/catch.hpp>

using namespace shoal;

namespace {

std::vector<ObjectEntry> Entries(std::vector<std::string> keys) {
  std::sort(keys.begin(), keys.end());
  std::vector<ObjectEntry> out;
  for (auto& k : keys) out.push_back(ObjectEntry{k, 1, "\"e\"", "2026-01-01T00:00:00.000Z"});
  return out;
}

std::vector<std::string> Keys(const ObjectPage& p) {
  std::vector<std::string> out;
  for (const ObjectEntry* e : p.contents) out.push_back(e->key);
  return out;
}

const std::vector<ObjectEntry> kModel =
    Entries({"m/t/config.json", "m/t/shards/a.bin", "m/t/shards/b.bin", "m/t/shards/c.bin",
             "m/t/tokenizer/vocab.txt", "m/t/z.txt"});

}  // namespace

TEST_CASE("a listing returns the keys under the prefix in order", "[read][list]") {
  ObjectListRequest r;
  r.prefix = "m/t/shards/";
  auto p = ListObjects(kModel, r);
  REQUIRE(p.ok());
  CHECK(Keys(*p) ==
        std::vector<std::string>{"m/t/shards/a.bin", "m/t/shards/b.bin", "m/t/shards/c.bin"});
  CHECK(!p->truncated);
}

TEST_CASE("a delimiter folds folders into common prefixes that count as keys", "[read][list]") {
  ObjectListRequest r;
  r.prefix = "m/t/";
  r.delimiter = "/";
  auto p = ListObjects(kModel, r);
  REQUIRE(p.ok());
  CHECK(Keys(*p) == std::vector<std::string>{"m/t/config.json", "m/t/z.txt"});
  CHECK(p->common_prefixes == std::vector<std::string>{"m/t/shards/", "m/t/tokenizer/"});
  CHECK(p->key_count() == 4);
}

TEST_CASE("pages of max-keys chain through continuation tokens without repeats or gaps",
          "[read][list]") {
  for (const std::string delimiter : {"", "/"}) {
    ObjectListRequest r;
    r.prefix = "m/t/";
    r.delimiter = delimiter;
    r.max_keys = 1;
    std::vector<std::string> seen;
    int pages = 0;
    for (;;) {
      auto p = ListObjects(kModel, r);
      REQUIRE(p.ok());
      ++pages;
      for (auto& k : Keys(*p)) seen.push_back(k);
      for (auto& c : p->common_prefixes) seen.push_back(c);
      if (!p->truncated) break;
      REQUIRE(!p->next_continuation.empty());
      r.continuation = p->next_continuation;
    }
    if (delimiter.empty()) {
      CHECK(seen.size() == kModel.size());
      CHECK(pages == 6);
    } else {
      CHECK(seen == std::vector<std::string>{"m/t/config.json", "m/t/shards/", "m/t/tokenizer/",
                                             "m/t/z.txt"});
    }
  }
}

TEST_CASE("v1 pages chain through NextMarker, a key or a common prefix, without repeats or gaps",
          "[read][list]") {
  for (const std::string delimiter : {"", "/"}) {
    INFO("delimiter '" << delimiter << "'");
    ObjectListRequest r;
    r.prefix = "m/t/";
    r.delimiter = delimiter;
    r.max_keys = 1;
    std::vector<std::string> seen;
    for (int pages = 0; pages < 20; ++pages) {
      auto p = ListObjects(kModel, r);
      REQUIRE(p.ok());
      for (auto& k : Keys(*p)) seen.push_back(k);
      for (auto& c : p->common_prefixes) seen.push_back(c);
      if (!p->truncated) break;
      // What a v1 client sends as the next marker: the last thing it got.
      REQUIRE(p->next_marker == seen.back());
      r.start_after = p->next_marker;
    }
    if (delimiter.empty()) {
      CHECK(seen == std::vector<std::string>{"m/t/config.json", "m/t/shards/a.bin",
                                             "m/t/shards/b.bin", "m/t/shards/c.bin",
                                             "m/t/tokenizer/vocab.txt", "m/t/z.txt"});
    } else {
      CHECK(seen == std::vector<std::string>{"m/t/config.json", "m/t/shards/", "m/t/tokenizer/",
                                             "m/t/z.txt"});
    }
  }
}

TEST_CASE("a marker that is a common prefix skips its keys, and any other marker is a plain key",
          "[read][list]") {
  ObjectListRequest r;
  r.prefix = "m/t/";
  r.delimiter = "/";
  r.start_after = "m/t/shards/";
  auto p = ListObjects(kModel, r);
  REQUIRE(p.ok());
  CHECK(p->common_prefixes == std::vector<std::string>{"m/t/tokenizer/"});
  CHECK(Keys(*p) == std::vector<std::string>{"m/t/z.txt"});
  CHECK(p->next_marker.empty());  // not truncated

  // Without a delimiter "m/t/shards/" is just a key to list after.
  r.delimiter = "";
  p = ListObjects(kModel, r);
  REQUIRE(p.ok());
  CHECK(Keys(*p).front() == "m/t/shards/a.bin");
}

TEST_CASE("start-after skips keys up to it, and a foreign token is refused", "[read][list]") {
  ObjectListRequest r;
  r.prefix = "m/t/";
  r.start_after = "m/t/shards/b.bin";
  auto p = ListObjects(kModel, r);
  REQUIRE(p.ok());
  CHECK(Keys(*p).front() == "m/t/shards/c.bin");
  r.continuation = "bm90LWEtdG9rZW4";  // "not-a-token"
  CHECK(!ListObjects(kModel, r).ok());
}

TEST_CASE("max-keys parses, caps at 1000 and refuses junk", "[read][list]") {
  CHECK(*ParseMaxKeys(nullptr) == 1000);
  std::string five = "5", big = "5000", neg = "-1", junk = "x";
  CHECK(*ParseMaxKeys(&five) == 5);
  CHECK(*ParseMaxKeys(&big) == 1000);
  CHECK(!ParseMaxKeys(&neg).ok());
  CHECK(!ParseMaxKeys(&junk).ok());
  for (std::string bad : {" 5", "+5", "5x", "0x10", "99999999999999999999999"}) {
    INFO(bad);
    Result<int> r = ParseMaxKeys(&bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("max-keys") == 0);
  }
  ObjectListRequest r;
  r.max_keys = 0;
  auto p = ListObjects(kModel, r);
  REQUIRE(p.ok());
  CHECK(p->key_count() == 0);
}
