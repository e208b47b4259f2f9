// JobThreads: one thread per blocking job (a pull, a seed, an owner's fetch
// order). Finished threads are joined when the next job starts, so a
// long-running agent does not accumulate them; the rest are joined on
// destruction.
//
// Thread-safety: Start() may be called from any thread.
#ifndef SHOAL_AGENT_DAEMON_JOB_THREADS_H_
#define SHOAL_AGENT_DAEMON_JOB_THREADS_H_

#include <kj/async.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal {

class JobThreads {
 public:
  JobThreads() = default;
  ~JobThreads() {
    std::lock_guard<std::mutex> lock(mu_);
    for (Job& j : jobs_) j.thread.join();
  }
  JobThreads(const JobThreads&) = delete;
  JobThreads& operator=(const JobThreads&) = delete;

  void Start(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    jobs_.push_back({std::thread([fn = std::move(fn), done] {
                       fn();
                       done->store(true);
                     }),
                     done});
  }

  // Jobs started and not yet finished.
  size_t Running() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const Job& j : jobs_) n += j.done->load() ? 0 : 1;
    return n;
  }

  // Runs `fn` on a thread of its own and returns its result as a promise on
  // the calling thread's kj event loop.
  template <typename T, typename Fn>
  kj::Promise<T> Run(Fn fn) {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<T>();
    // std::function needs a copyable callable; share the fulfiller.
    auto fulfiller =
        std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<T>>>(kj::mv(paf.fulfiller));
    Start([fn = std::move(fn), fulfiller]() mutable { (*fulfiller)->fulfill(fn()); });
    return kj::mv(paf.promise);
  }

 private:
  struct Job {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex mu_;
  std::vector<Job> jobs_;  // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_JOB_THREADS_H_
