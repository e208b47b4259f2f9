// VersionChunkSource: the set of chunk IDs a published version is made of,
// which is what an agent may ask the fetch scheduler for on that version's
// account. StoredVersionChunks reads it from the registry; a test or
// simulator may serve it from memory.
#ifndef SHOAL_TRACKER_VERSION_CHUNKS_H_
#define SHOAL_TRACKER_VERSION_CHUNKS_H_

#include <memory>
#include <unordered_set>

#include "scheduler/fetch_target.h"
#include "shoal/chunk_id.h"
#include "shoal/status.h"

namespace shoal::tracker {

class RegistryStore;

using ChunkSet = std::unordered_set<ChunkId>;

class VersionChunkSource {
 public:
  virtual ~VersionChunkSource() = default;
  // The chunks of every file of ns/name's version. NotFound if the version
  // is not in ns/name. May block on storage.
  virtual Result<std::shared_ptr<const ChunkSet>> Load(const FetchTarget& target) = 0;
};

// Decodes the version's manifest from the registry on every call (the
// scheduler keeps the last few). `store` must outlive it.
class StoredVersionChunks final : public VersionChunkSource {
 public:
  explicit StoredVersionChunks(RegistryStore& store) : store_(store) {}
  Result<std::shared_ptr<const ChunkSet>> Load(const FetchTarget& target) override;

 private:
  RegistryStore& store_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_VERSION_CHUNKS_H_
