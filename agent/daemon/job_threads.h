// JobThreads: one thread per blocking job (a pull, a seed, an owner's fetch
// order). Finished threads are joined when the next job starts, so a
// long-running agent does not accumulate them; the rest are joined on
// destruction.
//
// Not a WorkQueue: these jobs last seconds to hours and wait on one another
// (a pull waits for chunks that fetch orders bring in), so any fixed number
// of threads could queue a job behind the ones waiting for it.
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
#include <utility>
#include <vector>

#include "proto/thread_promise.h"

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
    return PromiseFromThread<T>([this](std::function<void()> job) { Start(std::move(job)); },
                                std::move(fn));
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
