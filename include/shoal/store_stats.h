// StoreStats: a snapshot of a ChunkStore's occupancy and counters. Counters
// start at zero when the store is opened; /metrics exports them.
#ifndef SHOAL_STORE_STATS_H_
#define SHOAL_STORE_STATS_H_

#include <cstdint>
#include <string>

namespace shoal {

struct StoreStats {
  // Occupancy now.
  uint64_t capacity_bytes = 0;  // the budget
  uint64_t used_bytes = 0;      // bytes of chunk files held
  uint64_t reserved_bytes = 0;  // bytes reserved by writes in flight
  uint64_t chunks = 0;
  uint64_t pinned_chunks = 0;
  uint64_t pinned_bytes = 0;
  uint64_t owned_chunks = 0;

  // Since open.
  uint64_t hits = 0;               // reads, spans and pins of a present chunk
  uint64_t misses = 0;             // the same, of an absent chunk
  uint64_t evictions = 0;          // chunks removed for space or on request
  uint64_t bytes_in = 0;           // bytes of chunks committed
  uint64_t bytes_out = 0;          // bytes read, handed out as spans, or materialized
  uint64_t corrupt_dropped = 0;    // chunks dropped for failing verification, at open or later
  uint64_t write_failures = 0;     // writes that failed or were abandoned before commit
  uint64_t index_errors = 0;       // index updates that failed; the next open repairs them
  uint64_t no_space_refusals = 0;  // writes refused NoSpace: no eviction could make room

  // What the reconcile at open found.
  uint64_t open_temp_removed = 0;     // leftover temporary files deleted
  uint64_t open_missing_dropped = 0;  // index records whose file was gone
  uint64_t open_unindexed_added = 0;  // verified files that had no record
  uint64_t open_garbage_removed = 0;  // files in chunks/ that are not chunks
};

// Whether the store is refusing writes for want of room, and whether room
// could be made now. See ChunkStore::Space().
struct StoreSpace {
  // A write was refused with NoSpace (no eviction could make room for it),
  // and no write has begun since.
  bool refusing = false;
  int64_t refusing_ms = 0;     // for how long writes have been refused
  uint64_t refused_bytes = 0;  // the size of the last write refused
  std::string why;             // its NoSpace message
  // Now: free space on the cache's filesystem for the agent, and what
  // eviction could free (chunks held and not pinned).
  uint64_t disk_free_bytes = 0;
  uint64_t evictable_bytes = 0;
  // The last refused write would fit now, on the budget and on the disk,
  // once what can be evicted is.
  bool room = true;
};

}  // namespace shoal

#endif  // SHOAL_STORE_STATS_H_
