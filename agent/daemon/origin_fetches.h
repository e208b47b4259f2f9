// OriginFetches: a pull's own origin fetches, `parallelism` at a time, for
// the local rule a pull falls back to while the tracker is unreachable.
// Each fetched chunk goes into the store and to the pull's torrent;
// TakeDone() reports them. Fetches start in the order they were added, on
// the pull's lane of the agent's ChunkFetcher (agent/fetch/chunk_fetcher.h),
// so a chunk that a read or a fetch order is fetching meanwhile is read from
// the origin once.
//
// Thread-safety: Add and TakeDone may be called from any thread.
#ifndef SHOAL_AGENT_DAEMON_ORIGIN_FETCHES_H_
#define SHOAL_AGENT_DAEMON_ORIGIN_FETCHES_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "fetch/chunk_fetcher.h"
#include "shoal/chunk_id.h"
#include "shoal/missing_chunk_policy.h"
#include "shoal/status.h"

namespace shoal {

class OriginFetches {
 public:
  // `streamed`, if not null, counts the origin's bytes as they arrive.
  OriginFetches(ChunkFetcher& fetcher, int parallelism, std::atomic<uint64_t>* streamed = nullptr);
  // Stops after the fetches running now; queued ones are dropped.
  ~OriginFetches();
  struct Done {
    size_t task;
    uint64_t piece;
    OriginRole role;  // as given to Add
    uint64_t bytes;   // the origin sent; 0 if the chunk was here already, or another asker's
                      // fetch read it
    Status status;
    double ms;  // how long the fetch took
  };
  // `role`: this agent's turn for the chunk, reported back in Done;
  // `seed`: where the chunk goes in the engine once stored. A chunk added
  // again before its Done is fetched once, and reported once.
  void Add(size_t task, uint64_t piece, const ChunkId& id, uint64_t size, OriginRole role,
           const PieceAt& seed);
  // Whether `id` was added and its Done is not yet ready.
  bool Fetching(const ChunkId& id) const { return lane_->Waiting(id); }
  std::vector<Done> TakeDone() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(done_, {});
  }

 private:
  std::atomic<uint64_t>* const streamed_;  // may be null
  std::mutex mu_;
  std::vector<Done> done_;  // protected by mu_
  // Last: destroying it ends the fetches and callbacks before done_ goes.
  std::unique_ptr<ChunkFetcher::Lane> lane_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_ORIGIN_FETCHES_H_
