// RegistryStore's chunk index: which chunks the origin is known to hold,
// with each one's size and when it was recorded (C| keys).
#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "registry_layout.h"
#include "registry_store.h"

namespace shoal::tracker {

bool RegistryStore::HasChunk(const ChunkId& id) {
  std::string v;
  return db_->Get(leveldb::ReadOptions(), ChunkKey(id), &v).ok();
}

Status RegistryStore::AddChunks(const std::vector<std::pair<ChunkId, uint64_t>>& chunks,
                                int64_t now_ms) {
  leveldb::WriteBatch batch;
  for (const auto& [id, size] : chunks) {
    char value[16];
    std::memcpy(value, &size, 8);
    std::memcpy(value + 8, &now_ms, 8);
    batch.Put(ChunkKey(id), leveldb::Slice(value, sizeof(value)));
  }
  return FromLevelDb(db_->Write(Synced(), &batch), "write chunk index");
}

Status RegistryStore::RemoveChunks(const std::vector<ChunkId>& ids) {
  leveldb::WriteBatch batch;
  for (const ChunkId& id : ids) batch.Delete(ChunkKey(id));
  return FromLevelDb(db_->Write(Synced(), &batch), "write chunk index");
}

void RegistryStore::ForEachChunk(const std::function<void(const ChunkId&, uint64_t, int64_t)>& fn) {
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek("C|"); it->Valid() && StartsWith(it->key(), "C|"); it->Next()) {
    auto id = ChunkId::ParseHex(it->key().ToString().substr(2));
    if (!id.ok() || it->value().size() != 16) continue;
    uint64_t size;
    int64_t at;
    std::memcpy(&size, it->value().data(), 8);
    std::memcpy(&at, it->value().data() + 8, 8);
    fn(*id, size, at);
  }
}

}  // namespace shoal::tracker
