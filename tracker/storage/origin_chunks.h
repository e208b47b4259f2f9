// Confirming chunks in the origin before the registry counts them: after a
// publish reports its uploads (chunksStored) and before a version that uses
// them is committed. Each check is a HEAD per chunk the chunk index does not
// hold yet; found chunks are added to the index. The index is read one chunk
// at a time, `parallelism` reads at once (a round trip each, on etcd).
#ifndef SHOAL_TRACKER_ORIGIN_CHUNKS_H_
#define SHOAL_TRACKER_ORIGIN_CHUNKS_H_

#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/status.h"

namespace shoal {
class Origin;
}

namespace shoal::tracker {

class RegistryStore;
class UploadLeases;
struct TrackerMetrics;

// What the checks touch. Every reference must outlive the calls.
struct OriginChunks {
  RegistryStore& store;  // the chunk index
  Origin& origin;
  TrackerMetrics& metrics;
  int parallelism;  // HEADs, and reads of the chunk index, at once
};

// What a publish is told to do with the chunks it names.
struct UploadPlan {
  std::vector<ChunkId> upload;  // leased to it now
  std::vector<ChunkId> wait;    // another publish holds the lease
};

// Blocking; run on the blocking pool. Of `ids`, the chunks the index lacks,
// each once, leased to `holder` for `ttl_ms` where the lease is free (to
// upload) or left to whoever holds it (to wait for). Counted in metrics.
Result<UploadPlan> PlanUpload(const OriginChunks& oc, UploadLeases& leases,
                              const std::vector<ChunkId>& ids, const std::string& holder,
                              int64_t ttl_ms);

// Blocking; run on the blocking pool. Indexes the reported chunks the origin
// holds and releases their upload leases (a chunk indexed already was
// uploaded twice: counted, and its lease released). NotFound names the
// chunks the origin lacks. A release that fails is logged, not returned:
// the index holds the chunks, so nobody asks for their leases again, and
// GC drops them once they expire.
Status RecordStored(const OriginChunks& oc, UploadLeases& leases, const std::vector<ChunkId>& ids);

// Blocking. Of `ids`, each once, the chunks the origin lacks: those the
// index does not hold and a HEAD does not find. Found ones are indexed.
Result<std::vector<ChunkId>> ChunksNotInOrigin(const OriginChunks& oc,
                                               const std::vector<ChunkId>& ids);

// Blocking; run on the blocking pool. OK if every chunk of `m` is in the
// origin; NotFound (asking for an upload) if some are not.
Status EnsureChunksInOrigin(const OriginChunks& oc, const Manifest& m);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ORIGIN_CHUNKS_H_
