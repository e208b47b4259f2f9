// The fetch scheduler as a pure scheduling component: agents are in-memory
// fakes (no RPC, registry, tokens, keys or origin) that hold each order
// until the test answers it.
#include <kj/async.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "agents/agent_directory.h"
#include "common/tracker_metrics.h"
#include "scheduler/fetch_scheduler.h"
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
  c.mutable_data()[2] = 0x5a;
  return c;
}

std::vector<ChunkId> Chunks(int n) {
  std::vector<ChunkId> out;
  for (int i = 0; i < n; ++i) out.push_back(Chunk(i));
  return out;
}

struct Cluster {
  explicit Cluster(FetchPolicy policy, int agents)
      : ws(loop), fetches(policy, directory, fakes, chunk_sets, metrics) {
    for (int i = 0; i < agents; ++i) {
      AgentRecord r;
      r.id = "agent-" + std::to_string(i);
      r.name = r.id;
      r.cache_bytes = 1 << 30;
      directory.Join(r, NowMs());
      fakes.Connect(r.id);
    }
  }
  void Settle() { loop.run(); }
  // Delivers every held order, round after round, until none is left;
  // calls `each_round` before each round.
  template <typename F>
  size_t DeliverAll(F each_round) {
    size_t n = 0;
    Settle();
    while (!fakes.held.empty()) {
      each_round();
      for (size_t held = fakes.held.size(); held > 0; --held, ++n) fakes.Deliver();
      Settle();
    }
    return n;
  }
  size_t DeliverAll() {
    return DeliverAll([] {});
  }

  FetchTarget target{"team-a", "m", VersionId{}};
  kj::EventLoop loop;
  kj::WaitScope ws;
  AgentDirectory directory{2000};
  FakeAgents fakes;
  InMemoryVersionChunks chunk_sets;
  TrackerMetrics metrics;
  FetchScheduler fetches;  // last: its orders point at the rest
};

FetchPolicy Policy(uint32_t budget, uint32_t per_agent) {
  FetchPolicy p;
  p.origin_budget = budget;
  p.fetches_per_agent = per_agent;
  p.pace_per_agent = false;  // a fixed cap, the default; paced below
  return p;
}

}  // namespace

TEST_CASE("fake agents: each chunk is ordered once, from its first owner on the ring",
          "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/1000, /*per_agent=*/1000), /*agents=*/5);
  std::vector<ChunkId> chunks = Chunks(60);
  CHECK(c.fetches.Need(c.target, chunks).queued == 60);
  CHECK(c.fetches.Need(c.target, chunks).pending == 60);  // a second asker adds nothing
  c.Settle();
  std::shared_ptr<const HashRing> ring = c.fetches.Ring();
  REQUIRE(ring->size() == 5);
  REQUIRE(c.fakes.sent.size() == 60);
  for (const ChunkId& chunk : chunks) {
    auto it = std::find_if(c.fakes.sent.begin(), c.fakes.sent.end(),
                           [&](const auto& s) { return s.second == chunk; });
    REQUIRE(it != c.fakes.sent.end());
    CHECK(it->first == ring->Owners(chunk, 1)[0]);
    CHECK(std::count_if(c.fakes.sent.begin(), c.fakes.sent.end(),
                        [&](const auto& s) { return s.second == chunk; }) == 1);
  }
  for (const auto& o : c.fakes.held) CHECK_FALSE(o.takeover);
  CHECK(c.DeliverAll() == 60);
  CHECK(c.fakes.sent.size() == 60);
  CHECK(c.metrics.owner_fetches == 60);
  CHECK(c.metrics.takeovers == 0);
  CHECK(c.fetches.in_flight() == 0);
  CHECK(c.fetches.Need(c.target, chunks).recent == 60);
}

TEST_CASE("fake agents: the origin budget bounds the orders in flight across the cluster",
          "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/3, /*per_agent=*/100), /*agents=*/6);
  c.fetches.Need(c.target, Chunks(40));
  size_t rounds = 0;
  size_t delivered = c.DeliverAll([&] {
    ++rounds;
    CHECK(c.fakes.held.size() <= 3);
    CHECK(c.fetches.in_flight() <= 3);
    CHECK(c.metrics.fetches_in_flight <= 3);
  });
  CHECK(delivered == 40);
  CHECK(rounds >= 40 / 3);
  CHECK(c.metrics.fetch_queue == 0);
  CHECK(c.metrics.fetches_in_flight == 0);
}

TEST_CASE("fake agents: no agent holds more than its share of orders", "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/100, /*per_agent=*/2), /*agents=*/3);
  c.fetches.Need(c.target, Chunks(50));
  size_t delivered = c.DeliverAll([&] {
    for (const auto& [agent, n] : c.fakes.HeldPerAgent()) CHECK(n <= 2);
  });
  CHECK(delivered == 50);
}

TEST_CASE("fake agents: a failed order is taken over by the chunk's next owner", "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/8, /*per_agent=*/8), /*agents=*/4);
  const ChunkId chunk = Chunk(7);
  c.fetches.Need(c.target, {chunk});
  c.Settle();
  std::vector<std::string> owners = c.fetches.Ring()->Owners(chunk, 3);
  REQUIRE(c.fakes.held.size() == 1);
  CHECK(c.fakes.held.front().agent == owners[0]);
  c.fakes.Fail(Status::IOError("origin: connection reset"));
  c.Settle();
  REQUIRE(c.fakes.held.size() == 1);
  CHECK(c.fakes.held.front().agent == owners[1]);
  CHECK(c.fakes.held.front().takeover);
  c.fakes.Fail(Status::IOError("origin: connection reset again"));
  c.Settle();
  REQUIRE(c.fakes.held.size() == 1);
  CHECK(c.fakes.held.front().agent == owners[2]);
  c.fakes.Deliver();
  c.Settle();
  CHECK(c.metrics.takeovers == 2);
  CHECK(c.metrics.takeover_fetches == 1);
  CHECK(c.metrics.owner_fetches == 0);
  CHECK(c.metrics.fetch_order_failures == 2);
  CHECK(c.fetches.Need(c.target, {chunk}).recent == 1);
}

TEST_CASE("fake agents: an agent whose connection drops loses its orders to the next owners",
          "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/100, /*per_agent=*/100), /*agents=*/3);
  std::vector<ChunkId> chunks = Chunks(30);
  c.fetches.Need(c.target, chunks);
  c.Settle();
  REQUIRE(c.fakes.held.size() == 30);
  const std::string gone = c.fakes.held.front().agent;
  size_t its_orders = c.fakes.HeldPerAgent()[gone];
  c.fakes.Disconnect(gone);
  c.directory.Leave(gone, 0);
  c.Settle();
  CHECK(c.fakes.held.size() == 30);
  CHECK(c.fakes.HeldPerAgent().count(gone) == 0);
  CHECK(c.metrics.takeovers == its_orders);
  CHECK(c.fetches.Ring()->size() == 2);
  CHECK(c.DeliverAll() == 30);
  CHECK(c.metrics.owner_fetches + c.metrics.takeover_fetches == 30);
}

TEST_CASE("fake agents: a chunk every owner fails is reported failed, and asking later starts over",
          "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/8, /*per_agent=*/8), /*agents=*/2);
  const ChunkId chunk = Chunk(3);
  c.fetches.Need(c.target, {chunk});
  c.Settle();
  for (int attempt = 0; attempt < FetchScheduler::kMaxAttempts; ++attempt) {
    REQUIRE(c.fakes.held.size() == 1);
    c.fakes.Fail(Status::NotFound("origin has no chunks/03"));
    c.Settle();
  }
  CHECK(c.fakes.held.empty());
  NeedReply r = c.fetches.Need(c.target, {chunk});
  REQUIRE(r.failed.size() == 1);
  CHECK_THAT(r.failed[0].second, Catch::Contains("origin has no chunks/03"));
}

TEST_CASE("fake agents: a version's chunk set is loaded once and kept", "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/8, /*per_agent=*/8), /*agents=*/1);
  c.chunk_sets.Add(c.target, Chunks(4));
  for (int i = 0; i < 3; ++i) {
    auto set = c.fetches.VersionChunks(c.target);
    REQUIRE(set.ok());
    CHECK((*set)->size() == 4);
    CHECK((*set)->count(Chunk(2)) == 1);
  }
  CHECK(c.chunk_sets.loads == 1);
  FetchTarget other{"team-a", "other", VersionId{}};
  CHECK(c.fetches.VersionChunks(other).status().IsNotFound());
}

TEST_CASE("fake agents: with two replicas the second owner copies each delivered chunk",
          "[fetch][fake]") {
  FetchPolicy p = Policy(/*budget=*/16, /*per_agent=*/16);
  p.replicas = 2;
  Cluster c(p, /*agents=*/3);
  std::vector<ChunkId> chunks = Chunks(12);
  c.fetches.Need(c.target, chunks);
  CHECK(c.DeliverAll() == 12);
  c.Settle();
  std::shared_ptr<const HashRing> ring = c.fetches.Ring();
  REQUIRE(c.fakes.replicated.size() == 12);
  for (const auto& [agent, chunk] : c.fakes.replicated) CHECK(agent == ring->Owners(chunk, 2)[1]);
  CHECK(c.metrics.replica_orders == 12);
  CHECK(c.fetches.replicas_queued() == 0);
  CHECK(c.fakes.sent.size() == 12);  // nothing read from the origin twice
}

TEST_CASE("fake agents: orders are timed on the clock the scheduler was given", "[fetch][fake]") {
  int64_t now = NowMs();
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  AgentDirectory directory{int64_t{1} << 40};  // nobody misses a heartbeat
  FakeAgents fakes;
  InMemoryVersionChunks chunk_sets;
  TrackerMetrics metrics;
  for (int i = 0; i < 3; ++i) {
    AgentRecord r;
    r.id = "agent-" + std::to_string(i);
    r.name = r.id;
    r.cache_bytes = 1 << 30;
    directory.Join(r, now);
    fakes.Connect(r.id);
  }
  FetchScheduler fetches(FetchPolicy{}, directory, fakes, chunk_sets, metrics,
                         [&now] { return now; });
  fetches.Need({"team-a", "m", VersionId{}}, {Chunk(1)});
  loop.run();
  REQUIRE(fakes.held.size() == 1);
  fetches.Tick();  // no time has passed on its clock
  loop.run();
  REQUIRE(fakes.held.size() == 1);
  // No fetch has been timed yet, so the wait is the longest; on this clock
  // it passes at once.
  now += MissingChunkPolicy::kMaxOrderTakeoverMs + 1;
  fetches.Tick();
  loop.run();
  REQUIRE(fakes.held.size() == 2);
  CHECK(fakes.held.back().takeover);
  CHECK(fakes.held.back().agent != fakes.held.front().agent);
  CHECK(metrics.takeovers == 1);
}

TEST_CASE("fake agents: an agent starts at one order and runs more once one has fetched alone",
          "[fetch][fake]") {
  FetchPolicy p = Policy(/*budget=*/64, /*per_agent=*/4);
  p.pace_per_agent = true;
  Cluster c(p, /*agents=*/1);
  c.fetches.Need(c.target, Chunks(20));
  c.Settle();
  CHECK(c.fakes.held.size() == 1);  // one order to begin with
  c.fakes.Deliver();                // it fetched, alone: the cap tries two
  c.Settle();
  CHECK(c.fakes.held.size() == 2);
}

TEST_CASE("fake agents: with a fixed cap every agent gets it from the start", "[fetch][fake]") {
  Cluster c(Policy(/*budget=*/64, /*per_agent=*/4), /*agents=*/1);
  c.fetches.Need(c.target, Chunks(20));
  c.Settle();
  CHECK(c.fakes.held.size() == 4);
}
