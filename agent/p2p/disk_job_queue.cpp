#include "p2p/disk_job_queue.h"

#include <chrono>

namespace shoal {

DiskJobQueue::DiskJobQueue(int workers, std::function<void(int)> idle) : idle_(std::move(idle)) {
  for (int i = 0; i < workers; ++i) queues_.push_back(std::make_unique<Queue>());
  for (int i = 0; i < workers; ++i) {
    queues_[i]->thread = std::thread([this, i] { Loop(i); });
  }
}

DiskJobQueue::~DiskJobQueue() { Stop(); }

void DiskJobQueue::Push(size_t key, std::unique_ptr<DiskJob> job) {
  Queue& q = *queues_[key % queues_.size()];
  bool was_empty;
  {
    std::lock_guard<std::mutex> l(q.mu);
    was_empty = q.jobs.empty();
    q.jobs.push_back(std::move(job));
  }
  // A worker only sleeps when its queue is empty.
  if (was_empty) q.cv.notify_one();
}

void DiskJobQueue::Stop() {
  for (auto& q : queues_) {
    std::lock_guard<std::mutex> l(q->mu);
    q->stop = true;
    q->cv.notify_one();
  }
  for (auto& q : queues_) {
    if (q->thread.joinable()) q->thread.join();
  }
}

void DiskJobQueue::Loop(int index) {
  Queue& q = *queues_[index];
  std::deque<std::unique_ptr<DiskJob>> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> l(q.mu);
      if (q.jobs.empty() && !q.stop) {
        if (!q.cv.wait_for(l, std::chrono::seconds(1), [&] { return !q.jobs.empty() || q.stop; })) {
          l.unlock();
          if (idle_) idle_(index);
          continue;
        }
      }
      if (q.jobs.empty() && q.stop) return;
      batch.swap(q.jobs);
    }
    for (auto& job : batch) job->Run();
    batch.clear();
  }
}

}  // namespace shoal
