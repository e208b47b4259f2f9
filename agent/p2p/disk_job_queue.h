// DiskJobQueue: a fixed set of worker threads, each with its own FIFO.
//
// Jobs for one piece always go to the same worker (piece % workers), so a
// piece's writes, its hash and its clear run in the order libtorrent issued
// them, while different pieces proceed in parallel.
//
// Not a WorkQueue: this is libtorrent's disk path, one job per 16 KiB
// block. A worker takes its whole queue under one lock, runs it as a batch
// and hands the batch's completions to the network thread together; jobs
// are move-only (they own libtorrent's handlers and buffers); and an idle
// worker ticks once a second. A shared FIFO of std::function would lose the
// per-piece order, the batching and the move-only jobs.
//
// Thread-safety: Push may be called from any thread. Stop drains every queue
// and joins the workers; it is idempotent.
#ifndef SHOAL_AGENT_P2P_DISK_JOB_QUEUE_H_
#define SHOAL_AGENT_P2P_DISK_JOB_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace shoal {

// A move-only unit of work (std::function would require copyable captures).
class DiskJob {
 public:
  virtual ~DiskJob() = default;
  virtual void Run() = 0;
};

template <typename F>
std::unique_ptr<DiskJob> MakeDiskJob(F&& f) {
  struct Fn final : DiskJob {
    explicit Fn(F&& fn) : fn_(std::move(fn)) {}
    void Run() override { fn_(); }
    F fn_;
  };
  return std::unique_ptr<DiskJob>(new Fn(std::forward<F>(f)));
}

class DiskJobQueue {
 public:
  // Hands a batch of completions to the thread that must run them.
  using Deliver = std::function<void(std::vector<std::unique_ptr<DiskJob>>)>;

  // `idle` runs on each worker about once a second when it has had no job,
  // with the worker's index, e.g. to close cached files. `deliver` receives
  // the completions that the jobs of one batch queued with Complete().
  DiskJobQueue(int workers, std::function<void(int)> idle, Deliver deliver);
  ~DiskJobQueue();
  DiskJobQueue(const DiskJobQueue&) = delete;
  DiskJobQueue& operator=(const DiskJobQueue&) = delete;

  int workers() const { return static_cast<int>(queues_.size()); }
  void Push(size_t key, std::unique_ptr<DiskJob> job);
  void Stop();

  // Called by a job: queues `done` to be delivered with the other
  // completions of the worker's current batch, so the network thread is
  // woken once per batch rather than once per 16 KiB block.
  static void Complete(std::unique_ptr<DiskJob> done);

 private:
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::unique_ptr<DiskJob>> jobs;  // protected by mu
    bool stop = false;                          // protected by mu
    std::thread thread;
  };
  void Loop(int index);

  std::vector<std::unique_ptr<Queue>> queues_;
  std::function<void(int)> idle_;
  Deliver deliver_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_DISK_JOB_QUEUE_H_
