#include "shoal/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace shoal {

void RunOnThreads(int threads, const std::function<void()>& worker) {
  std::vector<std::thread> extra;
  for (int t = 1; t < threads; ++t) extra.emplace_back(worker);
  worker();
  for (std::thread& t : extra) t.join();
}

void ParallelFor(size_t n, int parallelism, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  size_t threads = std::min<size_t>(n, static_cast<size_t>(std::max(1, parallelism)));
  RunOnThreads(static_cast<int>(std::max<size_t>(1, threads)), [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  });
}

}  // namespace shoal
