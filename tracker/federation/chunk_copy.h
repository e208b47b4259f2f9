// Copying a mirrored version's chunks from the upstream cluster's origin to
// this one's: each chunk is read whole from the upstream, checked against
// its ID (bytes that are not the chunk are refused, never stored) and put
// here, then indexed, so a copy killed half-way resumes where it stopped.
//
// Thread-safety: the functions block and may run on several threads at
// once; a CopyPacer is shared by all of them.
#ifndef SHOAL_TRACKER_FEDERATION_CHUNK_COPY_H_
#define SHOAL_TRACKER_FEDERATION_CHUNK_COPY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/status.h"

namespace shoal {
class Origin;
}

namespace shoal::tracker {

class RegistryStore;
struct TrackerMetrics;

struct ChunkRef {
  ChunkId id;
  uint64_t size = 0;
};

// Each distinct chunk of `m`, with its size, in file order.
std::vector<ChunkRef> ChunksOf(const Manifest& m);

// Paces copies to a number of bytes a second over all threads; 0 lets
// everything through at once.
class CopyPacer {
 public:
  explicit CopyPacer(uint64_t bytes_per_second) : rate_(bytes_per_second) {}
  // Waits until `bytes` more may go (they are counted as sent then).
  void Take(uint64_t bytes);

 private:
  const uint64_t rate_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point next_{};  // when the bytes taken so far are paid for
};

// What a copy touches. Every reference must outlive the calls.
struct ChunkCopyDeps {
  RegistryStore& store;  // this cluster's chunk index
  Origin& from;          // the upstream's origin
  Origin& to;            // this cluster's
  CopyPacer& pacer;
  TrackerMetrics& metrics;
  int parallelism;  // chunks in flight at once
};

// Copies `chunks`, `parallelism` at once, each indexed as it lands. The
// first failure stops the rest and is returned; a chunk whose bytes are not
// its ID is Corruption, naming it and the upstream origin, and counted in
// follow_chunks_refused. `stop` set ends the copy early (Unavailable).
// `bytes_left`, if given, drops by each chunk's size as it lands.
Status CopyChunks(const ChunkCopyDeps& d, const std::vector<ChunkRef>& chunks,
                  const std::atomic<bool>& stop, std::atomic<uint64_t>* bytes_left = nullptr);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FEDERATION_CHUNK_COPY_H_
