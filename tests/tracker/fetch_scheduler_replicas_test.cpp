// The tracker's fetch scheduler with in-process agents on a kj event loop
// (tracker/fetch_scheduler_harness.h), as in fetch_scheduler_test.cpp.
// Here: replica orders to a chunk's second owner, the takeover timeout
// taken from timed fetches, late orders, and where a chunk asked for again
// is sent.
#include <kj/async.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "proto/kj_status.h"
#include "scheduler/fetch_scheduler.h"
#include "shoal/missing_chunk_policy.h"
#include "shoal/utc_time.h"
#include "tracker/fetch_scheduler_harness.h"

using namespace shoal;
using namespace shoal::tracker;
using namespace shoal::tracker::fetchtest;

TEST_CASE(
    "with two replicas, each delivered chunk is copied to its second owner, not read from the "
    "origin again",
    "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/8, /*agents=*/4, /*grace_ms=*/15000, /*replicas=*/2);
  std::vector<ChunkId> chunks;
  for (int i = 0; i < 40; ++i) chunks.push_back(Chunk(i));
  h.fetches.Need(h.target, chunks);
  h.Settle();
  while (h.Pending() > 0) h.AnswerAll();
  while (h.PendingReplicas() > 0) h.AnswerReplicas();
  std::shared_ptr<const HashRing> ring = h.fetches.Ring();
  for (const ChunkId& c : chunks) {
    std::vector<std::string> owners = ring->Owners(c, 2);
    REQUIRE(owners.size() == 2);
    // The first owner fetched it; the second, and only it, copied it.
    const auto& first = h.orders[owners[0]];
    CHECK(std::count(first.seen.begin(), first.seen.end(), c) == 1);
    CHECK(std::count(first.replicated.begin(), first.replicated.end(), c) == 0);
    const auto& second = h.orders[owners[1]];
    CHECK(std::count(second.replicated.begin(), second.replicated.end(), c) == 1);
    CHECK(std::count(second.seen.begin(), second.seen.end(), c) == 0);
  }
  CHECK(h.metrics.owner_fetches == 40);
  CHECK(h.metrics.fetch_orders == 40);
  CHECK(h.metrics.replica_orders == 40);
  CHECK(h.fetches.replicas_queued() == 0);
}

TEST_CASE("replica orders are held to a few per agent, and none are sent with one replica",
          "[fetch]") {
  SECTION("replicas 2") {
    Harness h(/*budget=*/64, /*per_agent=*/64, /*agents=*/2, /*grace_ms=*/15000, /*replicas=*/2);
    std::vector<ChunkId> chunks;
    for (int i = 0; i < 30; ++i) chunks.push_back(Chunk(i));
    h.fetches.Need(h.target, chunks);
    h.Settle();
    while (h.Pending() > 0) h.AnswerAll();
    // Every chunk goes to the other agent; a few at a time.
    size_t copied = 0;
    while (h.PendingReplicas() > 0) {
      for (auto& [id, o] : h.orders)
        CHECK(o.replicas.size() <= size_t{FetchScheduler::kReplicasPerAgent});
      copied += h.AnswerReplicas();
    }
    CHECK(copied == 30);
  }
  SECTION("replicas 1") {
    Harness h(/*budget=*/64, /*per_agent=*/64, /*agents=*/2);
    h.fetches.Need(h.target, {Chunk(1), Chunk(2)});
    h.Settle();
    h.AnswerAll();
    CHECK(h.PendingReplicas() == 0);
    CHECK(h.metrics.replica_orders == 0);
  }
}

TEST_CASE("a replica order that fails is counted and does not hold up fetches", "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/8, /*agents=*/2, /*grace_ms=*/15000, /*replicas=*/2);
  h.fetches.Need(h.target, {Chunk(1)});
  h.Settle();
  h.AnswerAll();
  REQUIRE(h.PendingReplicas() == 1);
  for (auto& [id, o] : h.orders) {
    if (o.replicas.empty()) continue;
    o.replicas.front().answer->reject(
        ExceptionFromStatus(Status::Unavailable("no peer delivered chunk 01")));
    o.replicas.pop_front();
  }
  h.Settle();
  CHECK(h.metrics.replica_failures == 1);
  CHECK(h.fetches.replicas_queued() == 0);
  h.fetches.Need(h.target, {Chunk(2)});
  h.Settle();
  CHECK(h.Pending() == 1);
}

TEST_CASE("the takeover timeout waits the longest until a fetch is timed, then follows the slowest",
          "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/8, /*agents=*/1);
  // The first orders share the origin among all of them: no estimate yet.
  CHECK(h.fetches.takeover_ms() == MissingChunkPolicy::kMaxOrderTakeoverMs);
  // A small file's quick fetch is not taken as the measure.
  for (auto& [id, o] : h.orders) o.chunk_bytes = 900;
  h.fetches.Need(h.target, {Chunk(9)});
  h.Settle();
  h.AnswerAll();
  CHECK(h.fetches.takeover_ms() == MissingChunkPolicy::kMaxOrderTakeoverMs);
  for (auto& [id, o] : h.orders) o.chunk_bytes = 4 << 20;
  h.fetches.Need(h.target, {Chunk(1)});
  h.Settle();
  h.fetches.Tick();  // not late: nothing is handed over
  CHECK(h.metrics.takeovers == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  h.AnswerAll();
  // Twice the slowest (about 1.6 s) plus 2 s; for an agent running two
  // orders, twice the slowest of two.
  CHECK(h.fetches.takeover_ms() >= 2 * 1600 + 2000);
  CHECK(h.fetches.takeover_ms() < 2 * 3000 + 2000);
  CHECK(h.fetches.takeover_ms(2) >= 2 * 3200 + 2000);
  CHECK(h.fetches.takeover_ms(2) < 2 * 6000 + 2000);
}

TEST_CASE("two orders that ran together on one agent are timed at half their time each",
          "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/2, /*agents=*/1);
  h.fetches.Need(h.target, {Chunk(1), Chunk(2)});
  h.Settle();
  REQUIRE(h.Pending() == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  REQUIRE(h.AnswerAll() == 2);
  // Each took about 1.6 s sharing the agent: 0.8 s of it per order. One
  // order alone is given twice 0.8 s plus 2 s, two at once twice 1.6 s.
  CHECK(h.fetches.takeover_ms() >= 2 * 800 + 2000);
  CHECK(h.fetches.takeover_ms() < 2 * 1400 + 2000);
  CHECK(h.fetches.takeover_ms(2) >= 2 * 1600 + 2000);
  CHECK(h.fetches.takeover_ms(2) < 2 * 2800 + 2000);
}

TEST_CASE(
    "a late order whose agent still reads the origin is waited for, and handed over once it "
    "stops",
    "[fetch]") {
  Harness h(/*budget=*/8, /*per_agent=*/8, /*agents=*/2, 15000, 1, /*heartbeat_ms=*/500);
  // One quick timed fetch sets the takeover timeout to its floor.
  h.fetches.Need(h.target, {Chunk(1)});
  h.Settle();
  h.AnswerAll();
  REQUIRE(h.fetches.takeover_ms() == MissingChunkPolicy::kMinOrderTakeoverMs);
  h.fetches.Need(h.target, {Chunk(2)});
  h.Settle();
  std::string owner;
  for (auto& [id, o] : h.orders)
    if (!o.pending.empty()) owner = id;
  REQUIRE(!owner.empty());
  AgentStats stats;
  uint64_t read = 0;
  auto beat = [&](uint64_t more) {
    read += more;
    stats.origin_bytes_read = read;
    for (auto& [id, o] : h.orders) REQUIRE(h.directory.Heartbeat(id, stats, NowMs()));
  };
  // Past the timeout, with the owner's reads still moving: it is waited for.
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    beat(1 << 20);
  }
  h.fetches.Tick();
  h.Settle();
  CHECK(h.metrics.takeovers == 0);
  // Its reads stop: two heartbeat intervals later the next owner gets it.
  beat(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  beat(0);
  h.fetches.Tick();
  h.Settle();
  CHECK(h.metrics.takeovers == 1);
  size_t orders = 0;
  for (auto& [id, o] : h.orders) orders += std::count(o.seen.begin(), o.seen.end(), Chunk(2));
  CHECK(orders == 2);
}

TEST_CASE("a late order on a ring of one stays with its agent: a second order would fetch again",
          "[fetch]") {
  for (int agents : {1, 2}) {
    Harness h(/*budget=*/8, /*per_agent=*/8, agents);
    // One quick timed fetch sets the takeover timeout to its floor.
    h.fetches.Need(h.target, {Chunk(1)});
    h.Settle();
    h.AnswerAll();
    REQUIRE(h.fetches.takeover_ms() <= 3000);
    h.fetches.Need(h.target, {Chunk(2)});
    h.Settle();
    std::this_thread::sleep_for(std::chrono::milliseconds(h.fetches.takeover_ms() + 100));
    h.fetches.Tick();
    h.Settle();
    size_t orders = 0;
    for (auto& [id, o] : h.orders) orders += std::count(o.seen.begin(), o.seen.end(), Chunk(2));
    INFO(agents << " agents");
    CHECK(orders == (agents == 1 ? 1u : 2u));
    CHECK(h.metrics.takeovers == (agents == 1 ? 0u : 1u));
    h.AnswerAll();
  }
}

TEST_CASE(
    "a chunk asked for again after its grace period goes to the agent that delivered it, "
    "not to a new owner the ring moved it to",
    "[fetch]") {
  Harness h(/*budget=*/64, /*per_agent=*/64, /*agents=*/1, /*grace_ms=*/1);
  std::vector<ChunkId> chunks;
  for (int i = 0; i < 20; ++i) chunks.push_back(Chunk(100 + i));
  h.fetches.Need(h.target, chunks);
  h.Settle();
  REQUIRE(h.AnswerAll() == 20);  // agent-0 owned them all, alone on the ring
  // Three agents join: the ring now gives most of the chunks to them.
  for (int i = 1; i <= 3; ++i) h.AddAgent("agent-" + std::to_string(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  h.fetches.Tick();  // the deliveries' grace is over
  NeedReply again = h.fetches.Need(h.target, chunks);
  CHECK(again.queued == 20);
  h.Settle();
  CHECK(h.orders["agent-0"].pending.size() == 20);
  for (int i = 1; i <= 3; ++i) CHECK(h.orders["agent-" + std::to_string(i)].seen.empty());
  h.AnswerAll();
  // Had the holder gone, the ring's owners would get them.
  h.controls.Detach("agent-0", 0);
  h.Settle();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  h.fetches.Tick();
  h.fetches.Need(h.target, chunks);
  h.Settle();
  size_t others = 0;
  for (int i = 1; i <= 3; ++i) others += h.orders["agent-" + std::to_string(i)].seen.size();
  CHECK(others == 20);
  h.AnswerAll();
}
