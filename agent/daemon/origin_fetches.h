// OriginFetches: a pull's own origin fetches, `parallelism` at a time, for
// the local rule a pull falls back to while the tracker is unreachable.
// Each fetched chunk goes into the store; TakeDone() reports them. Fetches
// start in the order they were added, on a WorkQueue of `parallelism`
// threads.
//
// Thread-safety: Add and TakeDone may be called from any thread.
#ifndef SHOAL_AGENT_DAEMON_ORIGIN_FETCHES_H_
#define SHOAL_AGENT_DAEMON_ORIGIN_FETCHES_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/chunk_store.h"
#include "shoal/missing_chunk_policy.h"
#include "shoal/origin.h"
#include "shoal/status.h"
#include "shoal/work_queue.h"

namespace shoal {

class OriginFetches {
 public:
  // `streamed`, if not null, counts the origin's bytes as they arrive.
  OriginFetches(Origin& origin, ChunkStore& store, int parallelism,
                std::atomic<uint64_t>* streamed = nullptr);
  // Stops after the fetches running now; queued ones are dropped.
  ~OriginFetches();
  struct Done {
    size_t task;
    uint64_t piece;
    OriginRole role;  // as given to Add
    uint64_t bytes;   // the origin sent; 0 if the chunk was here already
    Status status;
    double ms;  // how long the fetch took
  };
  // `role`: this agent's turn for the chunk, reported back in Done.
  void Add(size_t task, uint64_t piece, const ChunkId& id, uint64_t size, OriginRole role);
  std::vector<Done> TakeDone() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(done_, {});
  }

 private:
  Origin& origin_;
  ChunkStore& store_;
  std::atomic<uint64_t>* const streamed_;  // may be null
  std::mutex mu_;
  std::vector<Done> done_;  // protected by mu_
  WorkQueue workers_;       // last: its threads stop before the rest is destroyed
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_ORIGIN_FETCHES_H_
