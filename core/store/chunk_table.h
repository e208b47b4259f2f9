// ChunkTable: the chunk store's in-memory view of its chunks, and the LRU
// order that eviction follows.
//
// Unpinned chunks sit on one of two intrusive LRU lists, unowned and owned;
// pinned chunks sit on neither, so eviction never looks at them and never
// has to skip them. Victim() takes the least recently used unowned chunk,
// and only when there is none, the least recently used owned one.
//
// Memory: one hash-map node per chunk, about 120 bytes with the 32-byte key.
// A whole open store measured 179 bytes of RSS per entry, LevelDB included:
// about 11 MiB for a terabyte of 16 MiB chunks (docs/benchmarks.md).
//
// Thread-safety: none; ChunkStoreImpl guards it with its mutex.
#ifndef SHOAL_CORE_CHUNK_TABLE_H_
#define SHOAL_CORE_CHUNK_TABLE_H_

#include <cstdint>
#include <unordered_map>

#include "shoal/chunk_id.h"

namespace shoal {

struct ChunkEntry {
  const ChunkId* id = nullptr;  // the map's key
  ChunkEntry* prev = nullptr;   // LRU neighbours while unpinned
  ChunkEntry* next = nullptr;
  uint64_t size = 0;
  int64_t last_access_ms = 0;  // Unix time in milliseconds
  uint64_t generation = 0;     // tells a re-added chunk from the one it replaced
  uint32_t pins = 0;
  bool owned = false;
  bool verified = false;      // content hashed since this process opened the store
  bool access_dirty = false;  // last_access_ms not yet written to the index
  // The file's change time (st_ctim, ns) when its content was last known
  // good: hashed, or written and renamed into place; 0 if unknown. A file
  // whose change time moved since was altered and is hashed again before
  // its bytes are handed out.
  int64_t file_ctime_ns = 0;
};

class ChunkTable {
 public:
  ChunkTable() = default;
  ChunkTable(const ChunkTable&) = delete;
  ChunkTable& operator=(const ChunkTable&) = delete;

  // Null if absent.
  ChunkEntry* Find(const ChunkId& id);
  // Adds an unpinned chunk as the most recently used of its list.
  // REQUIRES: `id` is absent.
  ChunkEntry* Insert(const ChunkId& id, uint64_t size, int64_t last_access_ms, bool owned,
                     bool verified);
  // Removes the entry, pinned or not. The pointer is dead afterwards.
  void Erase(ChunkEntry* e);

  // The first pin takes the entry off its list; the last unpin puts it back
  // as most recently used.
  void Pin(ChunkEntry* e);
  void Unpin(ChunkEntry* e);
  // Records an access: the entry becomes its list's most recently used.
  void Touch(ChunkEntry* e, int64_t now_ms);
  // Moves the entry to the other list, as its most recently used.
  void SetOwned(ChunkEntry* e, bool owned);

  // The chunk eviction should take next, or null when every chunk is pinned.
  ChunkEntry* Victim() const;

  size_t size() const { return map_.size(); }
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (auto& [id, e] : map_) fn(e);
  }

 private:
  struct List {
    ChunkEntry* head = nullptr;  // least recently used
    ChunkEntry* tail = nullptr;  // most recently used
  };
  List& ListOf(const ChunkEntry* e) { return e->owned ? owned_ : unowned_; }
  void Append(ChunkEntry* e);
  void Unlink(ChunkEntry* e);

  std::unordered_map<ChunkId, ChunkEntry> map_;
  List unowned_;
  List owned_;
  uint64_t next_generation_ = 1;
};

}  // namespace shoal

#endif  // SHOAL_CORE_CHUNK_TABLE_H_
