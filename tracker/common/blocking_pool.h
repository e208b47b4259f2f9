// BlockingPool: runs blocking work (origin requests, LevelDB scans) off the
// event loops on a WorkQueue and hands the result back as a kj::Promise.
//
// Thread-safety: Run() may be called on any event-loop thread; the work runs
// on one of the pool's threads; the promise resolves on the calling loop.
#ifndef SHOAL_TRACKER_BLOCKING_POOL_H_
#define SHOAL_TRACKER_BLOCKING_POOL_H_

#include <kj/async.h>

#include <functional>
#include <utility>

#include "proto/thread_promise.h"
#include "shoal/work_queue.h"

namespace shoal::tracker {

class BlockingPool {
 public:
  explicit BlockingPool(int threads) : queue_(threads) {}
  ~BlockingPool() = default;  // finishes queued work, then joins
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  template <typename T>
  kj::Promise<T> Run(std::function<T()> fn) {
    return PromiseFromThread<T>([this](std::function<void()> job) { queue_.Post(std::move(job)); },
                                std::move(fn));
  }

 private:
  WorkQueue queue_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_BLOCKING_POOL_H_
