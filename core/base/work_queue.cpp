#include "shoal/work_queue.h"

#include <utility>

namespace shoal {

WorkQueue::WorkQueue(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkQueue::~WorkQueue() { Stop(); }

bool WorkQueue::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void WorkQueue::Stop() { Shutdown(/*drop_queued=*/false); }

void WorkQueue::Cancel() { Shutdown(/*drop_queued=*/true); }

void WorkQueue::Shutdown(bool drop_queued) {
  std::deque<std::function<void()>> dropped;  // destroyed outside mu_
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    if (drop_queued) dropped.swap(jobs_);
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> l(join_mu_);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkQueue::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    l.unlock();
    job();
    job = nullptr;  // captures are released before the lock is taken again
    l.lock();
  }
}

}  // namespace shoal
