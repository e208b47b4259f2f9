// UploadLeases: which publish is uploading which chunk right now, so two
// concurrent publishes of overlapping content upload each chunk once, and
// chunk GC (chunk_gc.h) spares a chunk whose upload is under way.
//
// A lease names its holder (one publish's connection) and ends at an
// expiry, after which anyone may take it: a publisher that crashed holds
// nothing for long. Releasing is for chunks the index holds now
// (origin_chunks.h), which nobody uploads again, so it ends the lease
// whoever holds it.
//
// Two implementations, chosen by NewUploadLeases:
//  - local (one tracker on LevelDB): a map in memory. Soft state, lost on
//    restart, when every lease is free again (a duplicate upload then is
//    harmless, and counted), so a publisher that reconnects never waits
//    for leases its old connection held.
//  - shared (a fleet on etcd): the registry's L| keys (registry_store.h),
//    so a chunk leased through one tracker is refused through every other
//    and no tracker's GC sweeps it. Each call is a few round trips to etcd
//    however many chunks it names.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_UPLOAD_LEASES_H_
#define SHOAL_TRACKER_UPLOAD_LEASES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/status.h"

namespace shoal::tracker {

class RegistryStore;

class UploadLeases {
 public:
  UploadLeases() = default;
  virtual ~UploadLeases() = default;
  UploadLeases(const UploadLeases&) = delete;
  UploadLeases& operator=(const UploadLeases&) = delete;

  // Claims each of `ids` for `holder` until now + ttl where it is free,
  // expired or already `holder`'s; answers, per id, whether `holder` holds
  // it now. Unavailable if the registry cannot be reached.
  // REQUIRES: ids are distinct; holder is not empty.
  virtual Result<std::vector<bool>> Claim(const std::vector<ChunkId>& ids,
                                          const std::string& holder, int64_t now_ms,
                                          int64_t ttl_ms) = 0;

  // Ends the leases on `ids`, whoever holds them.
  virtual Status Release(const std::vector<ChunkId>& ids) = 0;

  // Every chunk anyone holds an unexpired lease on (through any tracker,
  // for the shared kind). With `drop_expired`, forgets expired leases on
  // the way, so a crashed publisher's do not pile up.
  virtual Result<std::unordered_set<ChunkId>> Leased(int64_t now_ms, bool drop_expired) = 0;

  // Unexpired leases claimed through this object and not yet released: the
  // uploads this tracker's publishers have under way (a fleet's other
  // trackers count their own). For the shoal_tracker_upload_leases gauge.
  virtual size_t held_here(int64_t now_ms) = 0;
};

// Leases in memory, for a tracker that alone owns its registry.
std::unique_ptr<UploadLeases> NewLocalUploadLeases();
// Leases in `store`'s registry, for a fleet sharing it. `store` must
// outlive the result.
std::unique_ptr<UploadLeases> NewSharedUploadLeases(RegistryStore& store);
// Shared when `registry` (TrackerOptions::registry) names a shared
// registry (not empty), else local.
std::unique_ptr<UploadLeases> NewUploadLeases(const std::string& registry, RegistryStore& store);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_UPLOAD_LEASES_H_
