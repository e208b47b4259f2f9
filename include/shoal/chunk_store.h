// ChunkStore: the agent's local chunk cache. Content-addressed, bounded by a
// byte budget, safe against crashes.
//
// Each chunk is one file named by its ChunkId, beside a LevelDB index (see
// store_options.h for the folder). A chunk becomes visible only after its
// bytes are written to a temporary file, verified against the ID, fsynced
// and renamed into place. Open() reconciles the index with the files, so a
// store killed at any point reopens consistent.
//
// Budget: only the store's own chunk files, plus writes in flight, count
// against StoreOptions::capacity_bytes. A write that would pass the high
// watermark first evicts down to the low watermark: least recently used
// chunks that this agent does not own, then owned ones. Pinned chunks are
// never evicted. The space for a write is reserved when it begins, on the
// budget and on the disk, so a full cache fails then, with NoSpace, and
// leaves no partial file.
//
// Verifying reads: a chunk written through this store was hashed as it was
// written. A chunk found at open is checked for size at open, and its whole
// file is hashed on its first read, span or pin-for-materialize after open
// (about 12 ms per 16 MiB at 1.4 GB/s, once per chunk per process). A
// mismatch drops the chunk, counts it in StoreStats::corrupt_dropped and
// returns Corruption; bad bytes are never served. Hashing every read instead
// would halve read throughput for bytes already checked, so it is not done;
// but each open compares the file's change time (st_ctime) with the one it
// had when last known good, and a file written over since is hashed again.
// Damage that leaves the change time alone (bit rot) is found by Verify() or
// at the next open. StoreOptions::verify_on_open hashes everything at open
// instead.
//
// Thread-safety: a ChunkStore may be used from any number of threads at
// once. Writers, pins and spans must be destroyed before the store.
#ifndef SHOAL_CHUNK_STORE_H_
#define SHOAL_CHUNK_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/chunk_span.h"
#include "shoal/chunk_writer.h"
#include "shoal/hash256.h"
#include "shoal/pin_handle.h"
#include "shoal/status.h"
#include "shoal/store_options.h"
#include "shoal/store_stats.h"

namespace shoal {

struct ChunkWriteOptions {
  bool owned = false;  // mark the chunk owned by this agent when it commits
};

class ChunkStore {
 public:
  // Opens or creates the store in options.dir and reconciles it with the
  // files there. Fails with InvalidArgument for bad options, or IOError if
  // another process has the folder open.
  static Result<std::unique_ptr<ChunkStore>> Open(const StoreOptions& options);

  ChunkStore() = default;
  virtual ~ChunkStore() = default;
  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // Stores `len` bytes as chunk `id`. Corruption if they do not hash to
  // `id`; NoSpace if the cache cannot make room. A chunk already present is
  // left as it is (only marked owned if asked) and the call succeeds.
  // REQUIRES: 0 < len <= kMaxPieceSize.
  virtual Status Put(const ChunkId& id, const uint8_t* data, size_t len,
                     const ChunkWriteOptions& wo = ChunkWriteOptions()) = 0;
  // As Put, for a caller that has already hashed the 16 KiB blocks: the
  // leaves are checked against `id`, the bytes are trusted to match them.
  virtual Status PutHashed(const ChunkId& id, const uint8_t* data, size_t len,
                           const std::vector<Digest>& leaves,
                           const ChunkWriteOptions& wo = ChunkWriteOptions()) = 0;

  // Starts a streaming write of a `size`-byte chunk, reserving its space
  // (evicting first if needed). AlreadyExists if the chunk is present;
  // NoSpace if nothing can be evicted. See chunk_writer.h.
  virtual Result<std::unique_ptr<ChunkWriter>> BeginWrite(
      const ChunkId& id, uint64_t size, const ChunkWriteOptions& wo = ChunkWriteOptions()) = 0;

  // Reads up to `len` bytes from `offset` into `buf`; returns the count,
  // short only at the chunk's end. NotFound if absent; Corruption if the
  // first read after open finds the file damaged (the chunk is dropped).
  virtual Result<size_t> Read(const ChunkId& id, uint64_t offset, uint8_t* buf, size_t len) = 0;

  // An open file and byte range for sendfile(2): up to `len` bytes of the
  // chunk from `offset`, with the chunk pinned while the span lives.
  virtual Result<ChunkSpan> OpenSpan(const ChunkId& id, uint64_t offset, uint64_t len) = 0;

  virtual bool Contains(const ChunkId& id) = 0;
  // The chunk's size in bytes, or NotFound.
  virtual Result<uint64_t> Size(const ChunkId& id) = 0;
  // Every chunk present, in no particular order (e.g. for have_pieces).
  virtual std::vector<ChunkId> List() = 0;

  // Pins the chunk so it is not evicted until the handle goes away.
  virtual Result<PinHandle> Pin(const ChunkId& id) = 0;
  // Marks the chunk owned (evicted after unowned ones) or not. NotFound if
  // absent.
  virtual Status SetOwned(const ChunkId& id, bool owned) = 0;
  // Removes the chunk now. NotFound if absent; Unavailable if pinned.
  virtual Status Evict(const ChunkId& id) = 0;
  // Hashes the chunk's file again, dropping it (Corruption) if it is bad.
  virtual Status Verify(const ChunkId& id) = 0;

  // Writes the file made of `chunks` to `target_path`: chunk i holds bytes
  // [i * piece_size, min((i + 1) * piece_size, file_size)). The file appears
  // whole or not at all (temporary file, fsync, rename), with permission
  // bits `mode` minus every write bit. Missing parent folders are created.
  // Uses copy_file_range, so a reflink-capable filesystem copies no data.
  // REQUIRES: piece_size is a power of two in [16 KiB, 64 MiB].
  virtual Status Materialize(const std::vector<ChunkId>& chunks, uint64_t file_size,
                             uint32_t piece_size, const std::string& target_path,
                             uint32_t mode) = 0;

  virtual StoreStats Stats() = 0;
  // Whether writes are being refused for want of room (see StoreSpace).
  // Calls statvfs(2) on the folder: for polls, not for every write.
  virtual StoreSpace Space() = 0;

  // Writes batched last-access times to the index now. Also done on
  // destruction.
  virtual Status Flush() = 0;
};

}  // namespace shoal

#endif  // SHOAL_CHUNK_STORE_H_
