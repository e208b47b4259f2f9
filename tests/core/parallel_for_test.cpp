#include "shoal/parallel_for.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using shoal::ParallelFor;
using shoal::RunOnThreads;

TEST_CASE("RunOnThreads runs the worker once per thread, the caller included", "[parallel_for]") {
  std::mutex mu;
  std::set<std::thread::id> ids;
  RunOnThreads(3, [&] {
    std::lock_guard<std::mutex> l(mu);
    ids.insert(std::this_thread::get_id());
  });
  CHECK(ids.size() == 3);
  CHECK(ids.count(std::this_thread::get_id()) == 1);

  std::atomic<int> calls{0};
  RunOnThreads(0, [&] { ++calls; });
  CHECK(calls == 1);
}

TEST_CASE("ParallelFor calls fn once for every index", "[parallel_for]") {
  std::vector<std::atomic<int>> seen(1000);
  ParallelFor(seen.size(), 4, [&](size_t i) { ++seen[i]; });
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == 1);

  std::atomic<int> calls{0};
  ParallelFor(0, 4, [&](size_t) { ++calls; });
  CHECK(calls == 0);
}
