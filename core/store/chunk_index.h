// ChunkIndex: the chunk store's LevelDB index, one record per chunk file.
//
// A record holds the chunk's size, last access time, whether this agent owns
// the chunk on the ring, and its state. Pin counts are not stored: a pin
// belongs to a live reader in this process, and a count that outlived a
// crash would keep a chunk from ever being evicted.
//
// The chunk files are the truth; the index is what makes open fast and
// keeps LRU order and ownership across restarts. Writes are not fsynced:
// after a power cut, ChunkStore's open-time reconcile drops records whose
// file is gone and re-verifies files that lost their record.
//
// Thread-safety: all methods may be called concurrently.
#ifndef SHOAL_CORE_CHUNK_INDEX_H_
#define SHOAL_CORE_CHUNK_INDEX_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/status.h"

namespace leveldb {
class Cache;
class DB;
}  // namespace leveldb

namespace shoal {

enum class ChunkState : uint8_t {
  kReady = 1,  // fsynced, verified and renamed into place
};

struct IndexRecord {
  uint64_t size = 0;
  int64_t last_access_ms = 0;  // Unix time in milliseconds
  bool owned = false;
  ChunkState state = ChunkState::kReady;
};

class ChunkIndex {
 public:
  // Opens or creates the index at `path`. Fails with IOError naming the
  // folder if another process holds it.
  static Result<std::unique_ptr<ChunkIndex>> Open(const std::string& path, uint64_t cache_bytes);
  ~ChunkIndex();
  ChunkIndex(const ChunkIndex&) = delete;
  ChunkIndex& operator=(const ChunkIndex&) = delete;

  Status Put(const ChunkId& id, const IndexRecord& record);
  // Writes all records in one atomic batch.
  Status PutMany(const std::vector<std::pair<ChunkId, IndexRecord>>& records);
  Status Delete(const ChunkId& id);

  // Calls `fn` for every chunk record in key order. A record that does not
  // decode is passed as a Corruption status so the caller can drop it.
  using Visitor = std::function<void(const ChunkId& id, const Result<IndexRecord>& record)>;
  Status ForEach(const Visitor& fn) const;

 private:
  ChunkIndex(leveldb::DB* db, leveldb::Cache* cache, std::string path);

  leveldb::DB* const db_;        // owned
  leveldb::Cache* const cache_;  // owned; outlives db_
  const std::string path_;
};

}  // namespace shoal

#endif  // SHOAL_CORE_CHUNK_INDEX_H_
