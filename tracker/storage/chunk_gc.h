// Mark and sweep of origin chunks that no version references.
//
// Mark: every chunk of every stored manifest. Sweep: each object under
// chunks/ in the origin that is unmarked, not leased by an upload in
// progress, and was first seen more than `grace_ms` ago. An object the index
// has never seen (left by a publish that crashed before reporting it) is
// recorded now and swept by a later run, so a publish in flight is never
// swept whatever its timing.
#ifndef SHOAL_TRACKER_CHUNK_GC_H_
#define SHOAL_TRACKER_CHUNK_GC_H_

#include <cstdint>

#include "shoal/status.h"

namespace shoal {
class Origin;
}

namespace shoal::tracker {

class RegistryStore;
class UploadLeases;
struct TrackerMetrics;

struct GcResult {
  uint64_t referenced = 0;    // chunks some version uses
  uint64_t unreferenced = 0;  // unused and past the grace period
  uint64_t young = 0;         // unused but inside the grace period, or leased
  uint64_t swept = 0;         // deleted from the origin (0 on a dry run)
  uint64_t swept_bytes = 0;
};

// Blocking; run it on the blocking pool. Reads the manifests and the chunk
// index in `store`, sweeps `origin`, spares chunks `leases` holds (read
// after the origin is listed; a run that is not dry also drops expired
// leases), and counts the run in `metrics`.
Result<GcResult> RunChunkGc(RegistryStore& store, Origin& origin, UploadLeases& leases,
                            TrackerMetrics& metrics, bool dry_run, int64_t grace_ms);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_CHUNK_GC_H_
