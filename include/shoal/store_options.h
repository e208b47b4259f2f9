// StoreOptions: how a ChunkStore is laid out on disk and how big it may grow.
//
// A plain struct: set the fields, call Validate(), pass it to
// ChunkStore::Open(). Per-call choices are parameters of the calls, not
// options here.
#ifndef SHOAL_STORE_OPTIONS_H_
#define SHOAL_STORE_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "shoal/chunk_id.h"
#include "shoal/status.h"

namespace shoal {

// Called once for every chunk that leaves the store: evicted for space,
// evicted on request, or dropped because it failed verification. (Chunks
// dropped by the reconcile inside Open() were never visible and are only
// counted in StoreStats.) It runs on
// the thread that removed the chunk, with no store lock held, so it may call
// back into the store. It must be thread-safe.
using EvictionListener = std::function<void(const ChunkId& id)>;

struct StoreOptions {
  // The cache folder. It holds chunks/, tmp/ and index/ and nothing else;
  // the store creates it if it is missing.
  std::string dir;

  // Byte budget for the chunk files the store holds (and is writing).
  // Other files on the same filesystem are not counted. Required, > 0.
  uint64_t capacity_bytes = 0;

  // A new write that would take the store above high_watermark x capacity
  // evicts least recently used chunks until the store is at or below
  // low_watermark x capacity, so evictions come in batches rather than one
  // per write. 0 < low_watermark <= high_watermark <= 1.
  double high_watermark = 0.95;
  double low_watermark = 0.85;

  // fsync every chunk file before it is renamed into place, so a chunk
  // file under its final name is always whole. The folder is not synced: a
  // power cut may lose the last chunks committed (they are fetched again),
  // never leave a bad one. Turn off only for tests and throwaway caches;
  // files damaged by a power cut are then caught by verification.
  bool sync = true;
  // Chunks smaller than this are not fsynced even with `sync`: a version of
  // thousands of small files would otherwise be paced by one fsync per
  // file (milliseconds each), and a small chunk lost or damaged by a power
  // cut is caught like any other (its size at open, its hash at first read
  // after open) and fetched again. 0 fsyncs every chunk.
  uint64_t sync_min_bytes = 1u << 20;

  // Hash every indexed chunk file at open. Off by default: a terabyte cache
  // would take minutes. When off, an indexed chunk is checked for size at
  // open and hashed in full on its first read (see chunk_store.h).
  bool verify_on_open = false;

  // Last-access times are kept in memory and written to the index in one
  // batch when this many have changed, or every access_flush_interval_ms,
  // or at close. A crash loses at most that much LRU history, never a chunk.
  uint32_t access_flush_batch = 1024;         // entries
  uint32_t access_flush_interval_ms = 10000;  // milliseconds

  // LevelDB block cache for the index, in bytes. The index is read in full
  // only at open, so a small cache is enough.
  uint64_t index_cache_bytes = 1u << 20;

  // See EvictionListener. May be empty.
  EvictionListener on_evict;

  // OK, or InvalidArgument naming the first bad field and its allowed range.
  Status Validate() const;
};

}  // namespace shoal

#endif  // SHOAL_STORE_OPTIONS_H_
