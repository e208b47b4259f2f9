// FetchScheduler: the cluster's origin fetches, ordered and paced.
//
// Agents ask for chunks no peer offered them (Registry.need); warm adds
// every chunk of a version. Each chunk is queued once however many agents
// ask, and sent as a fetch order to its first live owner on the ring. At
// most `origin_budget` orders are in flight across the cluster (with a fleet
// of trackers, this tracker's share of it: SetOriginBudget), and at most
// `fetches_per_agent` on one agent, so the origin's bandwidth goes to a few
// chunks at a time and each becomes shareable quickly, instead of to
// thousands of GETs that all finish together at the end. With
// `pace_per_agent`, each agent starts at one order and runs more only while
// more make it faster (OrderPacer); off by default, see docs/scale.md.
//
// Order: chunks somebody is waiting for come before warm-only chunks; within
// a class, first asked first served (agents ask in file order).
//
// Takeover: an order that fails (the agent reported an error or its
// connection dropped) or runs past an adaptive timeout goes to the chunk's
// next owner in rank. The timeout follows the tail, not the mean, since an
// order sent again while the first still runs reads the chunk from the
// origin twice: MissingChunkPolicy::OrderTakeoverMs of the slowest of the
// last `kTimingWindow` fetches of at least 1 MiB (twice it, plus 2 s, within
// 3 to 60 s; until one has been timed, 60 s). Fetches are timed per order:
// one that ran beside another order on its agent for its whole life counts
// half its time, and an order on an agent running k counts k times the
// slowest, since orders on one agent share its link. Past that, an order
// whose agent's heartbeats say its origin reads still move
// (AgentDirectory::ReadingOrigin) waits on, up to the 60 s maximum.
// A dead agent is caught sooner, by its connection. After
// `kMaxAttempts` owners the chunk is reported failed to whoever asks, for a
// while; asking again later starts over.
//
// Replicas: with `replicas` R > 1, once a chunk's first owner has delivered
// it, owners 2..R are ordered to copy it from the swarm (never the origin)
// and hold it as owned. If the first owner then dies or evicts it, the
// chunk is still in the swarm, and a later ask goes to an owner that holds
// it, so nothing is read from the origin again. Replica orders are peer
// traffic: they do not count against the origin budget, and at most
// `kReplicasPerAgent` run on one agent.
//
// A delivered chunk is remembered for `done_grace_ms`: asks in that window
// are answered "recent" (its seeders are being found). An ask after it
// orders the chunk again, since its holders may have evicted it: first to
// the agent that last delivered it, while it is connected, and only then by
// the ring. As agents join, a chunk's owner on the ring changes; the new
// owner would read from the origin what the old one holds, while the old
// one answers at once, from its cache, and seeds it again.
//
// Dependencies: the agent directory (who is on the ring), AgentOrders (how
// orders reach agents), a VersionChunkSource (what a version is made of),
// the metrics it counts in and a clock; nothing of the registry, tokens,
// keys or origin, so a test or simulator (tools/sim) can run it with agents
// in memory, on virtual time.
//
// Thread-safety: lives on one event loop (the tracker's main one); call only
// from that thread. Connections on other loops reach it through WarmDeps.
#ifndef SHOAL_TRACKER_FETCH_SCHEDULER_H_
#define SHOAL_TRACKER_FETCH_SCHEDULER_H_

#include <kj/async.h>
#include <kj/timer.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agents/agent_directory.h"
#include "common/tracker_metrics.h"
#include "proto/task_error_log.h"
#include "scheduler/agent_orders.h"
#include "scheduler/fetch_target.h"
#include "scheduler/order_pacer.h"
#include "scheduler/version_chunks.h"
#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"
#include "shoal/need_reply.h"
#include "shoal/status.h"

namespace shoal::tracker {

// The scheduler's settings; TrackerOptions holds them under the same names.
struct FetchPolicy {
  uint32_t origin_budget = 64;          // origin fetch orders in flight across the cluster
  uint32_t fetches_per_agent = 2;       // of those, at most this many on one agent
  int64_t fetch_done_grace_ms = 15000;  // a chunk delivered this recently is not ordered again
  uint32_t replicas = 1;                // owners per chunk; 2..R copy it from the swarm
  bool pace_per_agent = false;          // from 1 up to fetches_per_agent, as OrderPacer learns
};

// Progress of one warm: every chunk of a version ordered from its owner.
struct WarmWatch {
  uint32_t total = 0, done = 0, fetched = 0, failed = 0;
  uint64_t bytes = 0;
  std::function<void()> on_change;  // after every chunk
  kj::Own<kj::PromiseFulfiller<void>> finished;
};

class FetchScheduler final {
 public:
  static constexpr int kMaxAttempts = 3;
  static constexpr size_t kTimingWindow = 32;
  static constexpr uint64_t kTimedFetchMinBytes = 1 << 20;  // smaller fetches are not timed
  static constexpr int kReplicasPerAgent = 4;
  static constexpr size_t kMaxReplicaQueue = 1 << 16;  // further replica orders are dropped
  static constexpr size_t kMaxHolders = 1 << 18;       // delivered chunks whose holder is kept

  // Milliseconds since the epoch; every timestamp the scheduler keeps
  // (orders sent, chunks delivered or failed) and hands the directory.
  using NowMsFn = std::function<int64_t()>;

  // Every reference must outlive the scheduler. `now_ms` is the wall clock
  // (NowMs) in the tracker; a simulator passes its virtual time. The ring's
  // rebuild pacing (Ring) still measures its own build on steady_clock: it
  // paces CPU work, not a point in the cluster's time.
  FetchScheduler(FetchPolicy policy, AgentDirectory& agents, AgentOrders& orders,
                 VersionChunkSource& chunk_source, TrackerMetrics& metrics,
                 NowMsFn now_ms = nullptr);
  ~FetchScheduler();
  FetchScheduler(const FetchScheduler&) = delete;
  FetchScheduler& operator=(const FetchScheduler&) = delete;

  // Queues the chunks (already checked to belong to `target`) that are
  // neither queued, in flight nor recently delivered, then dispatches.
  NeedReply Need(const FetchTarget& target, const std::vector<ChunkId>& chunks);

  // Queues every chunk for its owner at warm priority; `watch` hears each
  // chunk's outcome and is fulfilled when all are done or failed.
  void Warm(const FetchTarget& target, const std::vector<ChunkId>& chunks,
            std::shared_ptr<WarmWatch> watch);

  // Checks in-flight orders for timeouts, forgets old deliveries, and
  // dispatches. Runs every `period` until the promise is dropped.
  kj::Promise<void> Run(kj::Timer& timer, kj::Duration period);
  void Tick();

  // The chunk IDs of ns/name's version `id`, loaded from the chunk source
  // once and kept for the last few versions asked about. NotFound if the
  // version is not in ns/name.
  Result<std::shared_ptr<const ChunkSet>> VersionChunks(const FetchTarget& target);

  // The ring of live agents; orders go to the best owners on it with a
  // control connection (AgentOrders::Connected, asked per order). It
  // follows the directory's log of changes; a ring of 512 agents or more
  // at most every 20 times as long as its last update took (churn changes
  // a ring of thousands many times a second): between updates an order for
  // an agent gone goes to the chunk's next owner, and an agent that just
  // joined owns nothing yet.
  std::shared_ptr<const HashRing> Ring();

  // Changes how many origin orders may be in flight at once from now on
  // (this tracker's share of the cluster's budget when several trackers
  // schedule). Orders already over a lowered budget run to the end; none
  // is sent until in-flight orders fall below it. REQUIRES: budget >= 1.
  void SetOriginBudget(uint32_t budget);
  uint32_t origin_budget() const { return origin_budget_; }

  size_t queued() const { return queue_.size(); }
  size_t in_flight() const { return in_flight_; }
  // Replica orders waiting or in flight.
  size_t replicas_queued() const { return replica_keys_.size(); }
  // Milliseconds after which an order is handed to the next owner, on an
  // agent running `running` orders.
  int64_t takeover_ms(int running = 1) const;

 private:
  struct Entry {
    ChunkId chunk;
    FetchTarget target;
    int klass = 0;     // 0: somebody waits; 1: warm only
    uint64_t seq = 0;  // ask order
    int attempt = 0;   // rank of the owner it goes (went) to
    bool in_flight = false;
    uint64_t order = 0;  // id of the current order, if in flight
    std::string agent;   // the agent holding the current order
    std::string holder;  // who delivered it last, if remembered: ordered first
    int64_t sent_ms = 0;
    std::string last_error;
    std::vector<std::shared_ptr<WarmWatch>> watches;
  };
  using Key = std::pair<int, uint64_t>;  // (klass, seq)

  void Enqueue(Entry e);
  void Requeue(Entry& e, const std::string& why);
  void Dispatch();
  // Which agents orders can go to now, for HashRing::Owners.
  std::function<bool(const std::string&)> ConnectedFilter() const;
  bool Send(Entry& e, const std::string& agent);
  void OnDone(const ChunkId& chunk, uint64_t order, const std::string& agent,
              const OrderPacer::Ticket& ticket, Status status, FetchOutcome outcome, int64_t ms);
  // How many origin orders `agent` may have in flight now.
  int AgentCap(const std::string& agent) const;
  // takeover_ms for an order on `agent`, by the orders it runs now.
  int64_t TakeoverMsFor(const std::string& agent) const;
  void PublishGauges();
  void Finish(Entry& e, bool ok, uint32_t fetched, uint64_t bytes);
  void RememberHolder(const ChunkId& chunk, const std::string& agent);
  void QueueReplicas(const Entry& e, const std::string& deliverer);
  void DispatchReplicas();
  void SendReplica(const std::string& agent, const FetchTarget& target, const ChunkId& chunk);

  const FetchPolicy policy_;
  uint32_t origin_budget_;  // policy_.origin_budget until SetOriginBudget
  AgentDirectory& agents_;
  AgentOrders& orders_;
  VersionChunkSource& chunk_source_;
  TrackerMetrics& metrics_;
  const NowMsFn now_ms_;                        // NowMs unless the constructor was given another
  std::unordered_map<ChunkId, Entry> entries_;  // queued or in flight
  std::set<std::pair<Key, ChunkId>> queue_;     // waiting entries, neediest first
  std::unordered_map<ChunkId, int64_t> delivered_;  // chunk -> when, within the grace period
  // chunk -> the agent that delivered it last; the oldest kMaxHolders are kept
  std::unordered_map<ChunkId, std::string> holders_;
  std::deque<ChunkId> holder_order_;  // holders_'s keys, oldest first
  std::unordered_map<ChunkId, std::pair<int64_t, std::string>> failed_;  // chunk -> when, error
  std::map<std::string, int> per_agent_;  // orders in flight per agent
  OrderPacer pacer_;                      // each agent's concurrency; its cap, with pace_per_agent
  struct Replica {
    std::string agent;
    FetchTarget target;
    ChunkId chunk;
  };
  std::deque<Replica> replicas_;                            // replica orders waiting, oldest first
  std::set<std::pair<std::string, ChunkId>> replica_keys_;  // (agent, chunk) waiting or in flight
  std::map<std::string, int> replicas_per_agent_;           // replica orders in flight per agent
  size_t in_flight_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t next_order_ = 1;
  std::deque<double> fetch_ms_;  // the last kTimingWindow fetch times per order, oldest first
  std::vector<std::pair<std::string, std::shared_ptr<const ChunkSet>>> chunk_sets_;  // newest last
  std::shared_ptr<const HashRing> ring_;
  std::chrono::steady_clock::time_point ring_next_build_{};  // not rebuilt before this
  // Set on destruction, so replies arriving later are ignored.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  TaskErrorLog task_errors_{LogLevel::kWarn, "fetch.order_error"};
  kj::TaskSet tasks_{task_errors_};  // the orders in flight; declared last, so cancelled first
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FETCH_SCHEDULER_H_
