// ChunkUploader: puts a checkpoint's chunks into the origin on worker
// threads while the folder is still being hashed.
//
// The hasher offers each piece it has just read (Offer) and the uploader
// keeps its bytes, so a chunk the origin lacks is hashed and uploaded from
// one read of the file. Kept bytes stay under a memory limit: when they
// reach it, Offer either waits for uploads to make room (WhenFull::kWait:
// hashing keeps the uploads' pace, and every byte is read once) or lets
// the piece go (kReadAgain: hashing runs ahead, for a publish committed as
// soon as it is hashed, whose upload workers also run at a lower CPU
// priority, behind hashing and the seed). A chunk let go, or never offered (its file's
// hashes came from the hash cache), is read again when its turn comes and
// checked against its ID first, so a file changed since hashing fails the
// publish instead of putting wrong bytes under a chunk's name. Buffers an
// upload is done with go back to the hasher, so memory is allocated once.
//
// Which chunks to upload is the caller's decision (the tracker's plan):
// Upload() queues them, Release() drops the bytes of the rest.
//
// Uploads in flight follow an UploadWindow: a PUT the origin answered with
// 429, SlowDown or another retried error halves the window, and each
// window's worth of clean PUTs widens it by one, up to the parallelism.
//
// Thread-safety: Offer() may be called from any thread, concurrently; every
// other method from one thread (the one that talks to the tracker).
#ifndef SHOAL_AGENT_CLI_CHUNK_UPLOADER_H_
#define SHOAL_AGENT_CLI_CHUNK_UPLOADER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/origin.h"
#include "shoal/piece_hasher.h"

namespace shoal {

// Where a chunk's bytes are on disk.
struct ChunkSource {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Every distinct chunk of `m`, located in the folder `dir`.
std::unordered_map<ChunkId, ChunkSource> LocateChunks(const Manifest& m, const std::string& dir);

struct UploadStats {
  std::atomic<uint64_t> uploaded_chunks{0};
  std::atomic<uint64_t> uploaded_bytes{0};
  std::atomic<uint64_t> skipped_chunks{0};  // found in the origin at upload time
  std::atomic<uint64_t> done_bytes{0};      // uploaded or skipped, for progress
  std::atomic<uint64_t> reread_bytes{0};    // read from disk a second time
  std::atomic<uint64_t> throttled{0};       // PUTs the origin asked to slow down
};

// How many uploads may be in flight: additive increase, multiplicative
// decrease, between 1 and `max`. Not thread-safe; a pure policy.
class UploadWindow {
 public:
  explicit UploadWindow(int max) : max_(max < 1 ? 1 : max), size_(max_) {}
  int size() const { return size_; }
  void OnThrottled() {
    size_ = size_ > 1 ? size_ / 2 : 1;
    clean_ = 0;
  }
  void OnClean() {
    if (size_ < max_ && ++clean_ >= size_) {
      ++size_;
      clean_ = 0;
    }
  }

 private:
  const int max_;
  int size_;
  int clean_ = 0;
};

class ChunkUploader {
 public:
  enum class WhenFull { kWait, kReadAgain };

  ChunkUploader(Origin& origin, int parallelism, uint64_t memory_limit, WhenFull when_full);
  // Stops the workers; a PUT in flight finishes first.
  ~ChunkUploader();
  ChunkUploader(const ChunkUploader&) = delete;
  ChunkUploader& operator=(const ChunkUploader&) = delete;

  // A piece just hashed: remembered once per chunk, its bytes kept (swapped
  // out of `piece`, which gets a spare buffer back) if they fit under the
  // memory limit, after waiting for room with WhenFull::kWait.
  void Offer(HashedPiece& piece);
  // Chunks first offered since the last call.
  std::vector<ChunkId> TakeOffered();
  // Makes chunks that were never offered uploadable from `sources`.
  void AddSources(const std::unordered_map<ChunkId, ChunkSource>& sources);

  // Queues `ids` for upload. A chunk this uploader has no source for fails
  // the upload with InvalidArgument.
  void Upload(const std::vector<ChunkId>& ids);
  // Drops the kept bytes of chunks that need no upload.
  void Release(const std::vector<ChunkId>& ids);
  // Waits up to `wait` for an upload to end (or fail) or a piece to be
  // offered; returns the chunks stored since the last call.
  std::vector<ChunkId> TakeStored(std::chrono::milliseconds wait);
  // Uploads queued or in flight.
  bool Busy() const;
  // The first error of any upload; later uploads are not started.
  Status status() const;
  // Fails the uploads with `why` (unless one failed first): none starts
  // after it, and an Offer waiting for room returns at once.
  void Abort(const Status& why);
  const UploadStats& stats() const { return stats_; }
  uint64_t kept_bytes() const;
  // Bytes of the chunks queued or in flight.
  uint64_t queued_bytes() const;

 private:
  struct Entry {
    ChunkSource source;
    std::vector<uint8_t> bytes;  // empty: read again from source
  };
  void Work();
  Status Put(const ChunkId& id, Entry& e);
  // REQUIRES: mu_ held.
  void Finish(const ChunkId& id, const Status& s, bool throttled);
  // Records the first error and wakes every waiter. REQUIRES: mu_ held.
  void Fail(const Status& s);
  // Gives up kept bytes, keeping the buffer as a spare. REQUIRES: mu_ held.
  void Recycle(std::vector<uint8_t>& bytes);

  Origin& origin_;
  const uint64_t memory_limit_;
  const WhenFull when_full_;
  const bool yield_cpu_;  // workers run niced: kReadAgain
  UploadStats stats_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_, room_cv_;
  std::unordered_map<ChunkId, Entry> entries_;  // protected by mu_
  std::vector<ChunkId> offered_;                // protected by mu_
  std::deque<ChunkId> queue_;                   // protected by mu_
  std::vector<ChunkId> stored_;                 // protected by mu_
  UploadWindow window_;                         // protected by mu_
  int in_flight_ = 0;                           // protected by mu_
  uint64_t retries_seen_ = 0;                   // protected by mu_; PUT retries reacted to
  uint64_t kept_ = 0;                           // protected by mu_
  uint64_t queued_ = 0;                         // protected by mu_
  std::vector<std::vector<uint8_t>> spare_;     // protected by mu_
  Status error_;                                // protected by mu_
  bool stopping_ = false;                       // protected by mu_
  std::vector<std::thread> workers_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_CHUNK_UPLOADER_H_
