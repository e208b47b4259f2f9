// The tracker's fetch scheduler with in-process agents on a kj event loop
// (tracker/fetch_scheduler_harness.h): each agent's control capability
// records the orders it gets and answers when the test says so. The orders
// go through AgentControls, as in the tracker, so this covers their Cap'n
// Proto form too. Here: the origin budget, the order chunks are fetched in,
// takeovers of failed orders, and the grace period after a delivery.
#include "scheduler/fetch_scheduler.h"

#include <kj/async.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "proto/kj_status.h"
#include "tracker/fetch_scheduler_harness.h"

using namespace shoal;
using namespace shoal::tracker;
using namespace shoal::tracker::fetchtest;

TEST_CASE("no more than the budget of origin fetches is in flight, and each chunk is ordered once",
          "[fetch]") {
  Harness h(/*budget=*/5, /*per_agent=*/100, /*agents=*/4);
  std::vector<ChunkId> chunks;
  for (int i = 0; i < 40; ++i) chunks.push_back(Chunk(i));
  NeedReply r = h.fetches.Need(h.target, chunks);
  CHECK(r.queued == 40);
  // A second agent asking for the same chunks adds nothing.
  NeedReply again = h.fetches.Need(h.target, chunks);
  CHECK(again.queued == 0);
  CHECK(again.pending == 40);
  h.Settle();
  size_t answered = 0, rounds = 0;
  while (h.Pending() > 0) {
    CHECK(h.Pending() <= 5);
    answered += h.AnswerAll();
    ++rounds;
  }
  CHECK(answered == 40);
  CHECK(rounds >= 8);
  CHECK(h.metrics.owner_fetches == 40);
  CHECK(h.metrics.takeovers == 0);
  // Just delivered: asking again is answered "recent", nothing is ordered.
  NeedReply later = h.fetches.Need(h.target, chunks);
  CHECK(later.recent == 40);
  h.Settle();
  CHECK(h.Pending() == 0);
}

TEST_CASE("a budget changed at runtime holds from then on: lowered, then raised", "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/100, /*agents=*/4);
  std::vector<ChunkId> chunks;
  for (int i = 0; i < 40; ++i) chunks.push_back(Chunk(i));
  h.fetches.Need(h.target, chunks);
  h.Settle();
  CHECK(h.Pending() == 8);
  // Three trackers now share the budget: orders in flight run to the end,
  // and no more are sent until fewer than the new share are.
  h.fetches.SetOriginBudget(3);
  CHECK(h.fetches.origin_budget() == 3);
  h.AnswerAll();
  CHECK(h.Pending() == 3);
  h.AnswerAll();
  CHECK(h.Pending() == 3);
  // Raised again: the scheduler fills the new room at once.
  h.fetches.SetOriginBudget(10);
  h.Settle();
  CHECK(h.Pending() == 10);
}

TEST_CASE("chunks pullers wait for go before warm-only chunks, in the order asked", "[fetch]") {
  Harness h(/*budget=*/1, /*per_agent=*/1, /*agents=*/1);
  auto watch = std::make_shared<WarmWatch>();
  std::vector<ChunkId> warm = {Chunk(100), Chunk(101), Chunk(102)};
  h.fetches.Warm(h.target, warm, watch);
  h.Settle();
  REQUIRE(h.Pending() == 1);  // the first warm chunk took the only slot
  h.fetches.Need(h.target, {Chunk(7), Chunk(3), Chunk(102)});
  h.Settle();
  while (h.Pending() > 0) h.AnswerAll();
  const std::vector<ChunkId>& seen = h.orders["agent-0"].seen;
  REQUIRE(seen.size() == 5);
  CHECK(seen[0] == Chunk(100));
  // Then what a puller waits for: the warm chunk it asked for keeps its
  // place in line (it was queued first), then the others in the order asked.
  CHECK(seen[1] == Chunk(102));
  CHECK(seen[2] == Chunk(7));
  CHECK(seen[3] == Chunk(3));
  CHECK(seen[4] == Chunk(101));  // warm-only last
  CHECK(watch->done == 3);
  CHECK(watch->failed == 0);
}

TEST_CASE("an order whose agent fails goes to the chunk's next owner, marked a takeover",
          "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/8, /*agents=*/3);
  h.fetches.Need(h.target, {Chunk(1)});
  h.Settle();
  REQUIRE(h.Pending() == 1);
  std::string first;
  for (auto& [id, o] : h.orders) {
    if (!o.pending.empty()) first = id;
  }
  CHECK_FALSE(h.orders[first].pending.front().takeover);
  h.orders[first].pending.front().answer->reject(
      ExceptionFromStatus(Status::IOError("origin: connection reset")));
  h.orders[first].pending.pop_front();
  h.Settle();
  REQUIRE(h.Pending() == 1);
  std::string second;
  for (auto& [id, o] : h.orders) {
    if (!o.pending.empty()) second = id;
  }
  CHECK(second != first);
  CHECK(h.orders[second].pending.front().takeover);
  h.AnswerAll();
  CHECK(h.metrics.takeovers == 1);
  CHECK(h.metrics.takeover_fetches == 1);
  CHECK(h.metrics.owner_fetches == 0);
}

TEST_CASE("a chunk no owner can fetch is reported failed with the last error", "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/8, /*agents=*/2);
  h.fetches.Need(h.target, {Chunk(9)});
  h.Settle();
  for (int attempt = 0; attempt < FetchScheduler::kMaxAttempts; ++attempt) {
    REQUIRE(h.Pending() == 1);
    for (auto& [id, o] : h.orders) {
      if (o.pending.empty()) continue;
      o.pending.front().answer->reject(
          ExceptionFromStatus(Status::NotFound("origin has no chunks/09")));
      o.pending.pop_front();
    }
    h.Settle();
  }
  CHECK(h.Pending() == 0);
  NeedReply r = h.fetches.Need(h.target, {Chunk(9)});
  REQUIRE(r.failed.size() == 1);
  CHECK_THAT(r.failed[0].second, Catch::Contains("origin has no chunks/09"));
}

TEST_CASE("a chunk delivered longer ago than the grace period is fetched again when asked for",
          "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/8, /*agents=*/2, /*grace_ms=*/0);
  h.fetches.Need(h.target, {Chunk(5)});
  h.Settle();
  CHECK(h.AnswerAll() == 1);
  h.fetches.Tick();  // forgets the delivery
  NeedReply r = h.fetches.Need(h.target, {Chunk(5)});
  CHECK(r.queued == 1);
  h.Settle();
  CHECK(h.AnswerAll() == 1);
  CHECK(h.metrics.owner_fetches == 2);
}

TEST_CASE("a busy agent's chunks wait while other owners' chunks go ahead", "[fetch]") {
  Harness h(/*budget=*/64, /*per_agent=*/2, /*agents=*/4);
  std::vector<ChunkId> chunks;
  for (int i = 0; i < 100; ++i) chunks.push_back(Chunk(i));
  h.fetches.Need(h.target, chunks);
  h.Settle();
  CHECK(h.Pending() == 8);  // 4 agents x 2
  for (auto& [id, o] : h.orders) CHECK(o.pending.size() == 2);
  while (h.Pending() > 0) h.AnswerAll();
  CHECK(h.metrics.owner_fetches == 100);
}
