// RegistryStore's chunk index: which chunks the origin is known to hold,
// with each one's size and when it was recorded (C| keys).
#include <cstring>

#include "registry/registry_layout.h"
#include "registry/registry_store.h"

namespace shoal::tracker {
namespace {

// Applies `batch` if it holds anything, and starts a new one.
Status Flush(KvStore& kv, KvBatch* batch) {
  if (batch->empty()) return Status::OK();
  Status s = kv.Apply(*batch);
  *batch = KvBatch();
  return s.WithContext("write chunk index");
}

}  // namespace

Result<bool> RegistryStore::HasChunk(const ChunkId& id) {
  auto v = kv_.Get(ChunkKey(id));
  if (!v.ok()) return v.status();
  return v->has_value();
}

// The index needs no atomicity across chunks (each entry stands alone), so
// large lists go in as many batches as the engine needs.
Status RegistryStore::AddChunks(const std::vector<std::pair<ChunkId, uint64_t>>& chunks,
                                int64_t now_ms) {
  KvBatch batch;
  for (const auto& [id, size] : chunks) {
    char value[16];
    std::memcpy(value, &size, 8);
    std::memcpy(value + 8, &now_ms, 8);
    batch.Put(ChunkKey(id), std::string(value, sizeof(value)));
    if (batch.ops().size() == kv_.max_batch_ops()) SHOAL_RETURN_IF_ERROR(Flush(kv_, &batch));
  }
  return Flush(kv_, &batch);
}

Status RegistryStore::RemoveChunks(const std::vector<ChunkId>& ids) {
  KvBatch batch;
  for (const ChunkId& id : ids) {
    batch.Delete(ChunkKey(id));
    if (batch.ops().size() == kv_.max_batch_ops()) SHOAL_RETURN_IF_ERROR(Flush(kv_, &batch));
  }
  return Flush(kv_, &batch);
}

Status RegistryStore::ForEachChunk(
    const std::function<void(const ChunkId&, uint64_t, int64_t)>& fn) {
  return VisitPrefix(kv_, "C|", [&](const KvPair& p) {
    auto id = ChunkId::ParseHex(p.key.substr(2));
    if (!id.ok() || p.value.size() != 16) return true;
    uint64_t size;
    int64_t at;
    std::memcpy(&size, p.value.data(), 8);
    std::memcpy(&at, p.value.data() + 8, 8);
    fn(*id, size, at);
    return true;
  });
}

}  // namespace shoal::tracker
