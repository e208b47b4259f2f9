#include "p2p/disk_job_queue.h"

#include <chrono>

namespace shoal {

namespace {

// The completions of the batch the current worker is running.
thread_local std::vector<std::unique_ptr<DiskJob>>* tls_completions = nullptr;

}  // namespace

void DiskJobQueue::Complete(std::unique_ptr<DiskJob> done) {
  // Only workers run jobs, and they always have a batch open.
  tls_completions->push_back(std::move(done));
}

DiskJobQueue::DiskJobQueue(int workers, std::function<void(int)> idle, Deliver deliver)
    : idle_(std::move(idle)), deliver_(std::move(deliver)) {
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
  std::vector<std::unique_ptr<DiskJob>> completions;
  tls_completions = &completions;
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
    for (auto& job : batch) {
      job->Run();
      job.reset();
      // Deliver in slices, so the network thread starts on the first
      // completions while this worker is still busy with a long batch.
      if (completions.size() >= 64) {
        deliver_(std::move(completions));
        completions.clear();
      }
    }
    batch.clear();
    if (!completions.empty()) {
      deliver_(std::move(completions));
      completions.clear();
    }
  }
}

}  // namespace shoal
