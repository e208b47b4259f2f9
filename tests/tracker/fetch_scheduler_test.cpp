// The tracker's fetch scheduler with in-process agents on a kj event loop:
// each agent's control capability records the orders it gets and answers
// when the test says so. The orders go through AgentControls, as in the
// tracker, so this covers their Cap'n Proto form too.
#include "scheduler/fetch_scheduler.h"

#include <kj/async.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <thread>

#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "scheduler/agent_controls.h"
#include "shoal/missing_chunk_policy.h"
#include "shoal/utc_time.h"
#include "tracker/fake_agents.h"

using namespace shoal;
using namespace shoal::tracker;

namespace {

ChunkId Chunk(int i) {
  ChunkId c;
  c.mutable_data()[0] = static_cast<uint8_t>(i);
  c.mutable_data()[1] = static_cast<uint8_t>(i >> 8);
  return c;
}

// One agent's control endpoint: records each order and holds its answer.
struct Orders {
  struct Pending {
    ChunkId chunk;
    bool takeover;
    kj::Own<kj::PromiseFulfiller<void>> answer;
  };
  std::deque<Pending> pending;
  std::vector<ChunkId> seen;
  uint64_t chunk_bytes = 4 << 20;  // what each answer reports fetched
  std::deque<Pending> replicas;    // replica orders, held until answered
  std::vector<ChunkId> replicated;
};

class RecordingControl final : public proto::AgentControl::Server {
 public:
  explicit RecordingControl(Orders& orders) : orders_(orders) {}

 protected:
  kj::Promise<void> fetch(FetchContext c) override {
    auto p = c.getParams();
    ChunkId chunk = ChunkId::FromBytes(p.getChunks()[0].begin());
    auto paf = kj::newPromiseAndFulfiller<void>();
    orders_.seen.push_back(chunk);
    orders_.pending.push_back({chunk, p.getTakeover(), kj::mv(paf.fulfiller)});
    uint64_t bytes = orders_.chunk_bytes;
    return paf.promise.then([c, bytes]() mutable {
      c.getResults().setFetched(1);
      c.getResults().setBytes(bytes);
    });
  }

  kj::Promise<void> replicate(ReplicateContext c) override {
    ChunkId chunk = ChunkId::FromBytes(c.getParams().getChunks()[0].begin());
    auto paf = kj::newPromiseAndFulfiller<void>();
    orders_.replicated.push_back(chunk);
    orders_.replicas.push_back({chunk, false, kj::mv(paf.fulfiller)});
    return kj::mv(paf.promise);
  }

 private:
  Orders& orders_;
};

struct Harness {
  Harness(uint32_t budget, uint32_t per_agent, int agents, int64_t grace_ms = 15000,
          uint32_t replicas = 1, int64_t heartbeat_ms = 2000)
      : ws(loop),
        directory(heartbeat_ms),
        fetches(FetchPolicy{budget, per_agent, grace_ms, replicas, /*pace_per_agent=*/false},
                directory, controls, chunk_sets, metrics) {
    for (int i = 0; i < agents; ++i) AddAgent("agent-" + std::to_string(i));
  }
  void AddAgent(const std::string& id) {
    AgentRecord r;
    r.id = id;
    r.name = id;
    r.cache_bytes = 1 << 30;
    directory.Join(r, NowMs());
    controls.Attach(id, 0, kj::heap<RecordingControl>(orders[id]));
  }
  // Orders reach the agents through the loop's executor (AgentControls), which
  // poll() drains and run() does not.
  void Settle() { ws.poll(); }
  using Queue = std::deque<Orders::Pending> Orders::*;
  // Orders held across all agents, in one of their queues.
  size_t Held(Queue q) {
    size_t n = 0;
    for (auto& [id, o] : orders) n += (o.*q).size();
    return n;
  }
  // Answers every held order in one of the agents' queues; returns how many.
  size_t Answer(Queue q) {
    size_t n = 0;
    for (auto& [id, o] : orders) {
      for (; !(o.*q).empty(); (o.*q).pop_front(), ++n) (o.*q).front().answer->fulfill();
    }
    Settle();
    return n;
  }
  size_t Pending() { return Held(&Orders::pending); }
  size_t AnswerAll() { return Answer(&Orders::pending); }
  size_t PendingReplicas() { return Held(&Orders::replicas); }
  size_t AnswerReplicas() { return Answer(&Orders::replicas); }
  FetchTarget target{"team-a", "m", VersionId{}};

  kj::EventLoop loop;
  kj::WaitScope ws;
  std::map<std::string, Orders> orders;  // before the controls: their capabilities point here
  AgentDirectory directory;
  AgentControls controls;
  InMemoryVersionChunks chunk_sets;
  TrackerMetrics metrics;
  FetchScheduler fetches;  // last: its orders hold references to the rest
};

}  // namespace

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
