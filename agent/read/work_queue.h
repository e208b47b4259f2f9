// WorkQueue: a fixed set of threads that run queued jobs in order, for the
// blocking parts of serving a read (tracker lookups) that must stay off the
// HTTP server's I/O threads.
//
// Thread-safety: Post and Stop may be called from any thread.
#ifndef SHOAL_AGENT_READ_WORK_QUEUE_H_
#define SHOAL_AGENT_READ_WORK_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal {

class WorkQueue {
 public:
  explicit WorkQueue(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~WorkQueue() { Stop(); }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // False (and `job` is dropped) once stopping.
  bool Post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return false;
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
  }

  // Runs the jobs already queued, then joins the threads. Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      job();
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // protected by mu_
  bool stopping_ = false;                   // protected by mu_
  std::vector<std::thread> threads_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_WORK_QUEUE_H_
