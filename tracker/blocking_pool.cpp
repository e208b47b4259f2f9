#include "blocking_pool.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace shoal::tracker {

void ParallelFor(size_t n, int parallelism, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> threads;
  size_t extra = std::min<size_t>(n, static_cast<size_t>(std::max(1, parallelism)));
  for (size_t t = 1; t < extra; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
}

}  // namespace shoal::tracker
