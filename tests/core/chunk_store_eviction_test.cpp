#include <unistd.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "core/store_test_support.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

constexpr size_t kUnit = 4 * kBlockSize;  // every chunk here is 64 KiB

// Records the order in which chunks leave the store.
struct EvictionLog {
  std::mutex mu;
  std::vector<ChunkId> ids;
  EvictionListener Listener() {
    return [this](const ChunkId& id) {
      std::lock_guard<std::mutex> l(mu);
      ids.push_back(id);
    };
  }
};

std::vector<TestChunk> MakeChunks(int n, uint64_t seed) {
  std::vector<TestChunk> out;
  for (int i = 0; i < n; ++i) out.push_back(MakeChunk(seed + i, kUnit));
  return out;
}

}  // namespace

TEST_CASE("eviction takes unowned chunks in LRU order, then owned ones, never pinned ones",
          "[store][eviction]") {
  TempDir dir;
  EvictionLog log;
  StoreOptions options = TestOptions(dir.path(), 10 * kUnit);
  options.high_watermark = 0.95;
  options.low_watermark = 0.3;
  options.on_evict = log.Listener();
  auto store = OpenOrDie(options);
  auto c = MakeChunks(10, 100);
  for (int i = 0; i < 9; ++i) REQUIRE(store->Put(c[i].id, c[i].data.data(), kUnit).ok());
  REQUIRE(store->SetOwned(c[0].id, true).ok());
  REQUIRE(store->SetOwned(c[1].id, true).ok());
  auto pin = store->Pin(c[2].id);
  REQUIRE(pin.ok());
  std::vector<uint8_t> buf(10);
  REQUIRE(store->Read(c[3].id, 0, buf.data(), buf.size()).ok());  // c3 becomes most recent
  CHECK(store->Stats().evictions == 0);

  // 10 units would pass 9.5, so the store evicts down to 3 units.
  REQUIRE(store->Put(c[9].id, c[9].data.data(), kUnit).ok());
  std::vector<ChunkId> expected = {c[4].id, c[5].id, c[6].id, c[7].id, c[8].id, c[3].id, c[0].id};
  CHECK(log.ids == expected);
  CHECK(store->Contains(c[1].id));
  CHECK(store->Contains(c[2].id));
  CHECK(store->Contains(c[9].id));
  StoreStats s = store->Stats();
  CHECK(s.evictions == 7);
  CHECK(s.used_bytes == 3 * kUnit);
  CHECK(s.chunks == 3);
  for (const ChunkId& gone : expected) {
    CHECK_FALSE(::access(ChunkPathIn(dir.path(), gone).c_str(), F_OK) == 0);
  }
  CHECK(FilesUnder(dir.path() + "/tmp").empty());
}

TEST_CASE("below the high watermark nothing is evicted", "[store][eviction]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 10 * kUnit);
  auto store = OpenOrDie(options);
  auto c = MakeChunks(9, 200);
  for (auto& chunk : c) REQUIRE(store->Put(chunk.id, chunk.data.data(), kUnit).ok());
  CHECK(store->Stats().evictions == 0);
  CHECK(store->Stats().chunks == 9);
}

TEST_CASE("a write into a cache of pinned chunks fails early, clearly and without a trace",
          "[store][eviction]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 4 * kUnit));
  auto c = MakeChunks(5, 300);
  std::vector<PinHandle> pins;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(store->Put(c[i].id, c[i].data.data(), kUnit).ok());
    auto pin = store->Pin(c[i].id);
    REQUIRE(pin.ok());
    pins.push_back(std::move(*pin));
  }
  auto w = store->BeginWrite(c[4].id, kUnit);
  REQUIRE(w.status().IsNoSpace());
  CHECK_THAT(w.status().message(), Catch::StartsWith("cache full"));
  CHECK_THAT(w.status().message(), Catch::Contains("is pinned (4 chunks)"));
  CHECK_THAT(w.status().message(), Catch::Contains("raise --cache-size"));
  CHECK(store->Stats().evictions == 0);
  CHECK(store->Stats().reserved_bytes == 0);
  CHECK(FilesUnder(dir.path() + "/tmp").empty());

  pins[1].Release();  // c1 can go now
  REQUIRE(store->Put(c[4].id, c[4].data.data(), kUnit).ok());
  CHECK_FALSE(store->Contains(c[1].id));
  CHECK(store->Contains(c[0].id));
}

TEST_CASE("writes in flight count against the budget", "[store][eviction]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 2 * kUnit));
  auto c = MakeChunks(3, 400);
  auto w1 = store->BeginWrite(c[0].id, kUnit);
  auto w2 = store->BeginWrite(c[1].id, kUnit);
  REQUIRE(w1.ok());
  REQUIRE(w2.ok());
  auto w3 = store->BeginWrite(c[2].id, kUnit);
  CHECK(w3.status().IsNoSpace());
  CHECK_THAT(w3.status().message(), Catch::Contains("being written (2 writes)"));
  w2->reset();
  CHECK(store->BeginWrite(c[2].id, kUnit).ok());
}

TEST_CASE("a chunk larger than the whole cache is refused", "[store][eviction]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), kUnit));
  auto w = store->BeginWrite(MakeChunk(1, 1).id, 2 * kUnit);
  CHECK(w.status().IsNoSpace());
  CHECK_THAT(w.status().message(), Catch::Contains("larger than the"));
}

TEST_CASE("LRU order survives a reopen", "[store][eviction]") {
  TempDir dir;
  // Three chunks fit under 0.95 x 4; a fourth evicts one.
  StoreOptions options = TestOptions(dir.path(), 4 * kUnit);
  auto c = MakeChunks(4, 500);
  {
    auto store = OpenOrDie(options);
    for (int i = 0; i < 3; ++i) {
      REQUIRE(store->Put(c[i].id, c[i].data.data(), kUnit).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    std::vector<uint8_t> buf(1);
    REQUIRE(store->Read(c[0].id, 0, buf.data(), 1).ok());  // c0 is now newest; c1 oldest
  }
  EvictionLog log;
  options.on_evict = log.Listener();
  auto store = OpenOrDie(options);
  REQUIRE(store->Put(c[3].id, c[3].data.data(), kUnit).ok());
  REQUIRE(log.ids.size() == 1);
  CHECK(log.ids[0] == c[1].id);
  CHECK(store->Contains(c[0].id));
}

TEST_CASE("a lowered capacity evicts at open", "[store][eviction]") {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path(), 10 * kUnit);
  auto c = MakeChunks(8, 600);
  {
    auto store = OpenOrDie(options);
    for (auto& chunk : c) REQUIRE(store->Put(chunk.id, chunk.data.data(), kUnit).ok());
  }
  options.capacity_bytes = 4 * kUnit;
  auto store = OpenOrDie(options);
  CHECK(store->Stats().used_bytes <= static_cast<uint64_t>(0.85 * 4 * kUnit));
  CHECK(store->Stats().evictions >= 5);
}
