#include "daemon/origin_fetches.h"

#include <chrono>

#include "shoal/origin_fetch.h"

namespace shoal {

OriginFetches::OriginFetches(Origin& origin, ChunkStore& store, int parallelism)
    : origin_(origin), store_(store) {
  for (int i = 0; i < parallelism; ++i) threads_.emplace_back([this] { Loop(); });
}

OriginFetches::~OriginFetches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void OriginFetches::Loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = queue_.front();
      queue_.pop_front();
    }
    auto start = std::chrono::steady_clock::now();
    Result<uint64_t> sent = FetchChunkFromOrigin(origin_, store_, job.id, job.size);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back({job.task, job.piece, job.role, sent.ok() ? *sent : 0, sent.status(), ms});
  }
}

}  // namespace shoal
