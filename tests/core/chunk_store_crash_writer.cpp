// The child process of the chunk store crash test: opens the store in
// argv[1] and changes it as fast as it can, in every way a store changes,
// until it is killed. Exits 2 if it cannot open the store.
#include <cstdio>
#include <cstdlib>
#include <random>

#include "core/store_test_support.h"

using namespace shoal;
using namespace shoal::testing;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <store-dir> <seed>\n", argv[0]);
    return 2;
  }
  StoreOptions options;
  options.dir = argv[1];
  options.capacity_bytes = 4u << 20;  // small, so evictions happen all the time
  options.sync = true;
  options.access_flush_batch = 8;
  auto opened = ChunkStore::Open(options);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 2;
  }
  ChunkStore& store = **opened;
  std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
  std::vector<uint8_t> buf(64 * 1024);
  for (;;) {
    int op = static_cast<int>(rng() % 10);
    std::vector<ChunkId> present = store.List();
    if (op < 6 || present.empty()) {
      size_t size = 1 + rng() % (256 * 1024);
      TestChunk c = MakeChunk(rng(), size);
      if (op % 3 == 0) {
        (void)store.Put(c.id, c.data.data(), c.data.size());
      } else if (op % 3 == 1) {
        (void)store.PutHashed(c.id, c.data.data(), c.data.size(), HashBlocks(c.data.data(), size));
      } else {
        // Blocks in reverse order, as a swarm might deliver them.
        auto w = store.BeginWrite(c.id, size);
        if (!w.ok()) continue;
        for (uint64_t b = BlockCount(size); b-- > 0;) {
          uint64_t off = b * kBlockSize;
          (void)(*w)->WriteAt(off, c.data.data() + off, std::min<uint64_t>(kBlockSize, size - off));
        }
        (void)(*w)->Commit();
      }
      continue;
    }
    const ChunkId& id = present[rng() % present.size()];
    if (op == 6) {
      (void)store.Evict(id);
    } else if (op == 7) {
      (void)store.SetOwned(id, rng() % 2 == 0);
    } else {
      (void)store.Read(id, 0, buf.data(), buf.size());
    }
  }
}
