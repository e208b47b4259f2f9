#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <thread>

#include "core/store_test_support.h"

using namespace shoal;
using namespace shoal::testing;

TEST_CASE("puts, reads, pins, spans and evictions from many threads keep the store consistent",
          "[store][concurrency]") {
  TempDir dir;
  std::atomic<uint64_t> listened{0};
  StoreOptions options = TestOptions(dir.path(), 2u << 20);
  options.access_flush_batch = 16;
  options.on_evict = [&](const ChunkId&) { listened.fetch_add(1); };
  auto store = OpenOrDie(options);

  std::vector<TestChunk> pool;
  for (int i = 0; i < 48; ++i)
    pool.push_back(MakeChunk(1000 + i, 1 + (i * 37 % 8) * kBlockSize + i));

  constexpr int kThreads = 6;
  constexpr int kOps = 1000;
  std::atomic<int> bad_reads{0}, unexpected{0};
  auto worker = [&](int t) {
    std::mt19937 rng(t);
    std::vector<uint8_t> buf(200 * 1024);
    for (int i = 0; i < kOps; ++i) {
      const TestChunk& c = pool[rng() % pool.size()];
      Status s;
      switch (rng() % 6) {
        case 0:
        case 1:
          s = store->Put(c.id, c.data.data(), c.data.size());
          // With 6 writers and a 2 MiB budget a put may find no room, never worse.
          if (!s.ok() && !s.IsNoSpace()) ++unexpected;
          break;
        case 2: {
          auto n = store->Read(c.id, 0, buf.data(), buf.size());
          if (n.ok() && (*n != c.data.size() || std::memcmp(buf.data(), c.data.data(), *n) != 0))
            ++bad_reads;
          if (!n.ok() && !n.status().IsNotFound()) ++unexpected;
          break;
        }
        case 3: {
          auto span = store->OpenSpan(c.id, 1, c.data.size());
          if (span.ok()) {
            ssize_t n =
                ::pread(span->fd(), buf.data(), span->length(), static_cast<off_t>(span->offset()));
            if (n != static_cast<ssize_t>(c.data.size() - 1) ||
                std::memcmp(buf.data(), c.data.data() + 1, static_cast<size_t>(n)) != 0)
              ++bad_reads;
          }
          break;
        }
        case 4: {
          auto pin = store->Pin(c.id);
          if (pin.ok()) {
            std::this_thread::yield();
            if (!store->Contains(c.id)) ++bad_reads;  // a pinned chunk cannot go
            (void)store->SetOwned(c.id, rng() % 2 == 0);
          }
          break;
        }
        case 5:
          s = store->Evict(c.id);
          if (!s.ok() && !s.IsNotFound() && s.code() != Status::Code::kUnavailable) ++unexpected;
          break;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();

  CHECK(bad_reads == 0);
  CHECK(unexpected == 0);
  StoreStats s = store->Stats();
  CHECK(s.pinned_chunks == 0);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.used_bytes <= options.capacity_bytes);
  CHECK(s.evictions > 0);  // the budget was really under pressure
  CHECK(s.evictions == listened.load());
  uint64_t total = 0;
  std::vector<ChunkId> ids = store->List();
  for (const ChunkId& id : ids) total += *store->Size(id);
  CHECK(s.used_bytes == total);
  CHECK(FilesUnder(dir.path() + "/chunks").size() == ids.size());
  CHECK(FilesUnder(dir.path() + "/tmp").empty());

  store.reset();
  options.verify_on_open = true;
  store = OpenOrDie(options);
  CHECK(store->Stats().corrupt_dropped == 0);
  CHECK(store->Stats().chunks == ids.size());
  CHECK(store->Stats().used_bytes == total);
}

TEST_CASE("several threads putting the same chunk store it once", "[store][concurrency]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(77, 40 * kBlockSize);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      if (!store->Put(c.id, c.data.data(), c.data.size()).ok()) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(store->Stats().chunks == 1);
  CHECK(store->Stats().used_bytes == c.data.size());
  CHECK(store->Stats().reserved_bytes == 0);
  CHECK(FilesUnder(dir.path() + "/chunks").size() == 1);
  CHECK(FilesUnder(dir.path() + "/tmp").empty());
}

TEST_CASE("one writer takes blocks from several threads at once", "[store][concurrency]") {
  TempDir dir;
  auto store = OpenOrDie(TestOptions(dir.path(), 64 << 20));
  TestChunk c = MakeChunk(78, 64 * kBlockSize);
  auto w = store->BeginWrite(c.id, c.data.size());
  REQUIRE(w.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t b = t; b < 64; b += 4) {
        (void)(*w)->WriteAt(b * kBlockSize, c.data.data() + b * kBlockSize, kBlockSize);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK((*w)->blocks_written() == 64);
  REQUIRE((*w)->Commit().ok());
  CHECK((*ReadAll(*store, c.id) == c.data));
}
