// A test harness for the tracker's fetch scheduler on a kj event loop.
// It fakes the agents: each one joins an AgentDirectory and attaches a
// RecordingControl through AgentControls, as in the tracker, so orders take
// their Cap'n Proto form. Each control records every fetch and replicate
// order it gets (Orders::seen, Orders::replicated) and holds its answer
// (Orders::pending, Orders::replicas) until the test answers or rejects it;
// a fetch answer reports one chunk of Orders::chunk_bytes fetched. Nothing
// reaches an origin, a network or LevelDB.
#ifndef SHOAL_TESTS_TRACKER_FETCH_SCHEDULER_HARNESS_H_
#define SHOAL_TESTS_TRACKER_FETCH_SCHEDULER_HARNESS_H_

#include <kj/async.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "proto/capnp_views.h"
#include "scheduler/agent_controls.h"
#include "scheduler/fetch_scheduler.h"
#include "shoal/utc_time.h"
#include "tracker/fake_agents.h"

namespace shoal::tracker::fetchtest {

inline ChunkId Chunk(int i) {
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

}  // namespace shoal::tracker::fetchtest

#endif  // SHOAL_TESTS_TRACKER_FETCH_SCHEDULER_HARNESS_H_
