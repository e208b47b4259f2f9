// SimRun: the state of one simulation (simulation.h's Simulate), split
// across sim_run.cpp (the event loop, arrivals, kills, origin fetches) and
// pull_polls.cpp (each pull's MissingChunkPolicy decisions).
//
// Thread-safety: none; one run on one thread.
#ifndef SHOAL_TOOLS_SIM_SIM_RUN_H_
#define SHOAL_TOOLS_SIM_SIM_RUN_H_

#include <kj/async.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent_directory.h"
#include "common/tracker_metrics.h"
#include "scheduler/fetch_scheduler.h"
#include "shoal/missing_chunk_policy.h"
#include "sim/event_queue.h"
#include "sim/flow_network.h"
#include "sim/piece_swarm.h"
#include "sim/sim_agents.h"
#include "sim/simulation.h"

namespace shoal::sim {

// The model's chunk set, for the scheduler (which asks only if a caller
// does: the simulation never does).
class SimVersionChunks final : public tracker::VersionChunkSource {
 public:
  explicit SimVersionChunks(const std::vector<ChunkId>& chunks)
      : set_(std::make_shared<const tracker::ChunkSet>(chunks.begin(), chunks.end())) {}
  Result<std::shared_ptr<const tracker::ChunkSet>> Load(const tracker::FetchTarget&) override {
    return set_;
  }

 private:
  std::shared_ptr<const tracker::ChunkSet> set_;
};

// A node's (or the origin's) bytes over time, sampled: when each tenth
// of `total` had arrived (or left), from `since`.
struct Progress {
  double total = 0;       // what the node lacked when its pull started (the origin: the model)
  double since = 0;       // when its pull (or the pulls) started
  double last_t = 0;      // the last sample
  double last_bytes = 0;  // ... and its bytes
  std::vector<double> deciles_s;
  void Sample(double t, double bytes);
};

class SimRun {
 public:
  // REQUIRES: options.Validate() is OK.
  explicit SimRun(const SimOptions& options);
  SimResult Run();

 private:
  // sim_run.cpp
  void Schedule();
  void Handle(const Event& e);
  void Register(int node);
  void StartPull(int node);
  void Kill(int node);
  void FlowDone(const FlowNetwork::Flow& f);
  void OriginBytes(int node, double bytes);
  // Bytes received by each pulling node and sent by the origin, now.
  void Sample();
  double SamplePeriod() const;
  // Every registered, live node heartbeats, telling the bytes its origin
  // flows have moved so far (AgentStats::origin_bytes_read).
  void Heartbeats();
  void Got(int node, int chunk);
  void WarmDone();
  bool Finished() const;
  int64_t NowMs() const;
  MissingChunkPolicy::TimePoint At(double t) const;
  // pull_polls.cpp
  void Poll();
  void PollDirect();
  void StartDirectFetches(int node);

  const SimOptions o_;
  const double t_lb_;
  kj::EventLoop loop_;
  kj::WaitScope wait_scope_{loop_};
  double now_ = 0;
  std::vector<ChunkId> chunk_ids_;
  tracker::FetchTarget target_{"sim", "model", {}};
  tracker::AgentDirectory directory_;
  tracker::TrackerMetrics metrics_;
  SimVersionChunks chunk_source_;
  FlowNetwork net_;
  PieceSwarm swarm_;
  SimAgents agents_;
  std::unique_ptr<tracker::FetchScheduler> scheduler_;
  const MissingChunkPolicy policy_;
  EventQueue events_;

  std::vector<NodeResult> nodes_;
  std::vector<bool> pulling_;        // its pull started
  std::vector<int> registered_;      // nodes registered with the tracker, in that order
  std::vector<int> pullers_;         // nodes whose pull started, in that order
  std::vector<float> last_asked_;    // node * chunks + chunk: when it asked the tracker; < 0 never
  std::vector<uint64_t> ask_stamp_;  // per chunk: the poll that last asked for it
  uint64_t poll_ = 0;
  std::vector<uint32_t> direct_next_, direct_in_flight_;  // without peers: per node
  std::vector<int> fetched_by_;     // per chunk: the node that last fetched it from the origin
  std::vector<uint32_t> fetches_;   // per chunk: whole reads from the origin
  std::vector<double> fetched_at_;  // per chunk: its first origin read ended; < 0 not yet
  std::vector<double> second_at_;   // per chunk: then another node first held it; < 0 not yet
  uint64_t origin_cut_bytes_ = 0;
  size_t pulls_waiting_ = 0;        // nodes whose pull has not started
  size_t live_incomplete_ = 0;      // pulling, alive, not complete
  uint64_t origin_bytes_ = 0;       // this phase
  std::vector<double> received_;    // per node: bytes of its ended flows, since its pull started
  std::vector<Progress> progress_;  // per node
  Progress origin_progress_;        // the origin's, during the pulls
  uint64_t warm_origin_bytes_ = 0;
  double warm_s_ = 0;
  bool warm_done_ = false;
  std::shared_ptr<tracker::WarmWatch> warm_;
  uint64_t events_handled_ = 0;
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_SIM_RUN_H_
