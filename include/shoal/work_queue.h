// WorkQueue: a fixed set of threads that run posted jobs in the order they
// were posted. Shoal's one thread pool: blocking work (tracker lookups,
// origin requests, LevelDB scans) runs here so that event loops and HTTP
// I/O threads never block.
//
// Thread-safety: Post, Stop and Cancel may be called from any thread but a
// worker of this queue (Stop and Cancel join the workers).
#ifndef SHOAL_WORK_QUEUE_H_
#define SHOAL_WORK_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal {

class WorkQueue {
 public:
  // REQUIRES: threads >= 1.
  explicit WorkQueue(int threads);
  // Stop(): jobs already queued still run.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `job` for the next free thread. False (and `job` is dropped)
  // once stopping.
  bool Post(std::function<void()> job);

  // Runs the jobs already queued, then joins the threads. Idempotent.
  void Stop();

  // Drops the jobs not yet started, waits for the running ones, then joins
  // the threads. Idempotent.
  void Cancel();

 private:
  void Shutdown(bool drop_queued);
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // protected by mu_
  bool stopping_ = false;                   // protected by mu_
  std::mutex join_mu_;                      // serializes joining threads_
  std::vector<std::thread> threads_;        // protected by join_mu_ after construction
};

}  // namespace shoal

#endif  // SHOAL_WORK_QUEUE_H_
