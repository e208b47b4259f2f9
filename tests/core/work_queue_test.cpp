#include "shoal/work_queue.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

using shoal::WorkQueue;

TEST_CASE("one worker runs jobs in the order they were posted", "[work_queue]") {
  std::vector<int> order;
  {
    WorkQueue q(1);
    for (int i = 0; i < 100; ++i) REQUIRE(q.Post([&order, i] { order.push_back(i); }));
  }  // the destructor runs what is queued
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(order[i] == i);
}

TEST_CASE("jobs run side by side on several workers", "[work_queue]") {
  WorkQueue q(4);
  std::promise<void> all_in;
  std::shared_future<void> go = all_in.get_future().share();
  std::atomic<int> started{0};
  for (int i = 0; i < 4; ++i) {
    q.Post([&] {
      if (++started == 4) all_in.set_value();
      go.wait();  // returns only once all four run at the same time
    });
  }
  CHECK(go.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  q.Stop();
}

TEST_CASE("Stop finishes queued jobs, Cancel drops them, and neither takes more", "[work_queue]") {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> ran{0};

  WorkQueue stopped(1);
  stopped.Post([gate] { gate.wait(); });
  for (int i = 0; i < 5; ++i) stopped.Post([&ran] { ++ran; });

  WorkQueue cancelled(1);
  std::promise<void> busy;
  cancelled.Post([&busy, gate] {
    busy.set_value();
    gate.wait();
  });
  for (int i = 0; i < 5; ++i) cancelled.Post([&ran] { ran += 100; });
  busy.get_future().wait();  // the blocking job has started, the other five wait

  // Opens the gate once both queues refuse new work, i.e. are stopping
  // while their five jobs still wait behind the blocked one.
  auto opener = std::async(std::launch::async, [&] {
    while (stopped.Post([] {}) || cancelled.Post([] {})) std::this_thread::yield();
    release.set_value();
  });
  auto stop = std::async(std::launch::async, [&] { stopped.Stop(); });
  cancelled.Cancel();
  stop.get();
  opener.get();

  CHECK(ran == 5);
  CHECK_FALSE(stopped.Post([&ran] { ++ran; }));
  CHECK_FALSE(cancelled.Post([&ran] { ++ran; }));
  CHECK(ran == 5);
}
