// BlockingPool: runs blocking work (origin requests, LevelDB scans) off the
// RPC event loop and hands the result back as a kj::Promise.
//
// Thread-safety: Run() is called on the event-loop thread; the work runs on
// one of the pool's threads; the promise resolves on the calling loop.
#ifndef SHOAL_TRACKER_BLOCKING_POOL_H_
#define SHOAL_TRACKER_BLOCKING_POOL_H_

#include <kj/async.h>
#include <kj/debug.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal::tracker {

class BlockingPool {
 public:
  explicit BlockingPool(int threads);
  ~BlockingPool();  // finishes queued work, then joins
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  template <typename T>
  kj::Promise<T> Run(std::function<T()> fn) {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<T>();
    // std::function needs a copyable callable; share the fulfiller.
    auto fulfiller =
        std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<T>>>(kj::mv(paf.fulfiller));
    Post([fn = std::move(fn), fulfiller] {
      try {
        (*fulfiller)->fulfill(fn());
      } catch (const kj::Exception& e) {
        (*fulfiller)->reject(kj::cp(e));
      } catch (const std::exception& e) {
        (*fulfiller)
            ->reject(
                kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(e.what())));
      }
    });
    return kj::mv(paf.promise);
  }

 private:
  void Post(std::function<void()> job);
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // protected by mu_
  bool stopping_ = false;                   // protected by mu_
  std::vector<std::thread> threads_;
};

// Calls fn(i) for i in [0, n) on up to `parallelism` threads; blocks.
void ParallelFor(size_t n, int parallelism, const std::function<void(size_t)>& fn);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_BLOCKING_POOL_H_
