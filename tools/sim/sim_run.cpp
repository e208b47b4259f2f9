#include "sim/sim_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace shoal::sim {
namespace {

// The scheduler's clock reads 2026-01-01T00:00:00Z at virtual time 0, so
// its timestamps look like the tracker's.
constexpr int64_t kEpochMs = 1767225600000;

std::string NodeId(int i) {
  std::string s = std::to_string(i);
  return "node-" + std::string(s.size() < 5 ? 5 - s.size() : 0, '0') + s;
}

std::vector<std::string> NodeIds(uint32_t n) {
  std::vector<std::string> ids;
  for (uint32_t i = 0; i < n; ++i) ids.push_back(NodeId(static_cast<int>(i)));
  return ids;
}

std::vector<ChunkId> ChunkIds(const SimOptions& o) {
  std::vector<ChunkId> ids(o.chunks);
  uint64_t x = o.seed;
  for (uint32_t i = 0; i < o.chunks; ++i) {
    for (size_t b = 0; b < 32; b += 8) {  // splitmix64: distinct, evenly spread IDs
      uint64_t z = (x += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      for (size_t k = 0; k < 8; ++k)
        ids[i].mutable_data()[b + k] = static_cast<uint8_t>(z >> (8 * k));
    }
  }
  return ids;
}

}  // namespace

SimRun::SimRun(const SimOptions& options)
    : o_(options),
      t_lb_(options.t_lb_s()),
      chunk_ids_(ChunkIds(options)),
      directory_(static_cast<int64_t>(options.heartbeat_ms)),
      chunk_source_(chunk_ids_),
      net_(options.nodes, options.node_bytes_per_s * options.link_efficiency,
           options.origin_bytes_per_s, options.origin_request_bytes_per_s),
      swarm_(options, net_),
      agents_(NodeIds(options.nodes), chunk_ids_,
              SimAgents::Hooks{[this](int node, int chunk) { return swarm_.Has(node, chunk); },
                               [this](int node, int chunk, bool) {
                                 events_.Push({now_ + o_.origin_latency_ms / 1000,
                                               EventKind::kOriginStart, node, chunk});
                               },
                               [this](int node, int chunk) {
                                 swarm_.HandOn(node, chunk,
                                               fetched_by_[static_cast<size_t>(chunk)]);
                               }}),
      nodes_(options.nodes),
      pulling_(options.nodes, false),
      last_asked_(o_.peers ? static_cast<size_t>(options.nodes) * options.chunks : 0, -1.0f),
      ask_stamp_(options.chunks, 0),
      direct_next_(options.nodes, 0),
      direct_in_flight_(options.nodes, 0),
      fetched_by_(options.chunks, -1),
      fetches_(options.chunks, 0),
      fetched_at_(options.chunks, -1),
      second_at_(options.chunks, -1),
      received_(options.nodes, 0),
      progress_(options.nodes) {
  tracker::FetchPolicy policy;
  policy.origin_budget = o_.origin_budget;
  policy.fetches_per_agent = o_.fetches_per_agent;
  policy.pace_per_agent = o_.pace_fetches_per_agent;
  policy.replicas = o_.hand_on + 1;  // owners 2..K+1 are the hand-on receivers
  scheduler_ = std::make_unique<tracker::FetchScheduler>(policy, directory_, agents_, chunk_source_,
                                                         metrics_, [this] { return NowMs(); });
}

double SimRun::SamplePeriod() const { return std::min(1.0, t_lb_ / 200); }

int64_t SimRun::NowMs() const { return kEpochMs + std::llround(now_ * 1000); }

MissingChunkPolicy::TimePoint SimRun::At(double t) const {
  // Offset by an hour so that no instant of the run is the clock's epoch.
  return MissingChunkPolicy::TimePoint(
      std::chrono::duration_cast<MissingChunkPolicy::Clock::duration>(
          std::chrono::duration<double>(3600 + t)));
}

void SimRun::Schedule() {
  const uint32_t n = o_.nodes;
  pulls_waiting_ = n;
  if (o_.scenario == Scenario::kStaggered) {
    const double window = o_.stagger_window_s > 0 ? o_.stagger_window_s : t_lb_ / 2;
    for (uint32_t i = 0; i < n; ++i) {
      const double t = n > 1 ? window * i / (n - 1) : 0;
      events_.Push({t, EventKind::kRegister, static_cast<int>(i), -1});
      events_.Push({t, EventKind::kPullStart, static_cast<int>(i), -1});
    }
  } else {
    for (uint32_t i = 0; i < n; ++i)
      events_.Push({0, EventKind::kRegister, static_cast<int>(i), -1});
    if (o_.scenario != Scenario::kWarm) {
      for (uint32_t i = 0; i < n; ++i)
        events_.Push({0, EventKind::kPullStart, static_cast<int>(i), -1});
    }
  }
  if (o_.scenario == Scenario::kKills) {
    std::vector<int> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
    std::mt19937_64 rng(o_.seed);
    std::shuffle(order.begin(), order.end(), rng);
    const size_t kills = static_cast<size_t>(std::lround(o_.kill_fraction * n));
    for (size_t i = 0; i < kills; ++i)
      events_.Push({o_.kill_at_tlb * t_lb_, EventKind::kKill, order[i], -1});
  }
  events_.Push({0, EventKind::kPoll, -1, -1});
  events_.Push({SamplePeriod(), EventKind::kSample, -1, -1});
  events_.Push({o_.tracker_tick_ms / 1000, EventKind::kTrackerTick, -1, -1});
  events_.Push({o_.heartbeat_ms / 1000, EventKind::kHeartbeats, -1, -1});
}

void SimRun::Register(int node) {
  tracker::AgentRecord r;
  r.id = agents_.id(node);
  r.name = r.id;
  r.cache_bytes = uint64_t{1} << 40;  // every node the same weight on the ring
  r.session = 1;
  directory_.Join(std::move(r), NowMs());
  registered_.push_back(node);
  agents_.Connect(node);
  if (o_.scenario == Scenario::kWarm && static_cast<uint32_t>(node) + 1 == o_.nodes) {
    warm_ = std::make_shared<tracker::WarmWatch>();
    warm_->on_change = [this] {
      if (warm_->done == warm_->total) WarmDone();
    };
    scheduler_->Warm(target_, chunk_ids_, warm_);
  }
}

void SimRun::WarmDone() {
  if (warm_done_) return;
  warm_done_ = true;
  warm_s_ = now_;
  warm_origin_bytes_ = origin_bytes_;
  origin_bytes_ = 0;
  std::fill(fetches_.begin(), fetches_.end(), 0);
  for (NodeResult& r : nodes_) r.origin_bytes = 0;
  for (uint32_t i = 0; i < o_.nodes; ++i)
    events_.Push({now_, EventKind::kPullStart, static_cast<int>(i), -1});
}

void SimRun::StartPull(int node) {
  const double model = static_cast<double>(o_.model_bytes());
  if (pulls_waiting_ == o_.nodes) origin_progress_ = {model, now_, now_, 0, {}};
  --pulls_waiting_;
  NodeResult& r = nodes_[static_cast<size_t>(node)];
  if (r.killed) return;
  r.start_s = now_;
  // What it holds from before (a warm's chunks) does not count.
  const double lacks = model - static_cast<double>(swarm_.held(node) * o_.piece_bytes);
  progress_[static_cast<size_t>(node)] = {lacks, now_, now_, 0, {}};
  received_[static_cast<size_t>(node)] = 0;
  pulling_[static_cast<size_t>(node)] = true;
  pullers_.push_back(node);
  if (o_.peers) swarm_.Join(node);
  if (swarm_.complete(node)) {
    r.done_s = 0;
  } else {
    ++live_incomplete_;
  }
}

void SimRun::Kill(int node) {
  NodeResult& r = nodes_[static_cast<size_t>(node)];
  if (r.killed) return;
  r.killed = true;
  if (pulling_[static_cast<size_t>(node)] && r.done_s < 0) --live_incomplete_;
  std::vector<int> flows = net_.uplink(node);
  flows.insert(flows.end(), net_.downlink(node).begin(), net_.downlink(node).end());
  for (int id : flows) {
    const FlowNetwork::Flow f = net_.flow(id);
    const double moved = net_.Cancel(id, now_);
    received_[static_cast<size_t>(f.dst)] += moved;
    if (f.src == FlowNetwork::kOrigin) {
      OriginBytes(f.dst, moved);  // the origin sent them, whoever died
      origin_cut_bytes_ += static_cast<uint64_t>(std::llround(moved));
    } else {
      swarm_.TransferCancelled(f);
    }
  }
  swarm_.Leave(node);
  agents_.Drop(node);
  directory_.Leave(agents_.id(node), 1);
}

void SimRun::OriginBytes(int node, double bytes) {
  const uint64_t b = static_cast<uint64_t>(std::llround(bytes));
  origin_bytes_ += b;
  nodes_[static_cast<size_t>(node)].origin_bytes += b;
}

void Progress::Sample(double t, double bytes) {
  // Linear between samples, as the benchmark reads its 1 s counters.
  while (deciles_s.size() < 10) {
    const double target = total * static_cast<double>(deciles_s.size() + 1) / 10;
    if (bytes < target * (1 - 1e-9)) break;
    const double share = bytes > last_bytes ? (target - last_bytes) / (bytes - last_bytes) : 1;
    deciles_s.push_back(last_t + std::clamp(share, 0.0, 1.0) * (t - last_t) - since);
  }
  last_t = t;
  last_bytes = bytes;
}

void SimRun::Sample() {
  for (int node : pullers_) {
    const size_t n = static_cast<size_t>(node);
    if (nodes_[n].killed || progress_[n].deciles_s.size() == 10) continue;
    double bytes = received_[n];
    for (int id : net_.downlink(node)) bytes += net_.Moved(id, now_);
    progress_[n].Sample(now_, bytes);
  }
  if (pulls_waiting_ < o_.nodes) {  // the pulls' origin reads, not the warm's
    double sent = static_cast<double>(origin_bytes_);
    for (int id : net_.origin_flows()) sent += net_.Moved(id, now_);
    origin_progress_.Sample(now_, sent);
  }
}

void SimRun::Heartbeats() {
  for (int node : registered_) {
    const NodeResult& r = nodes_[static_cast<size_t>(node)];
    if (r.killed) continue;
    double read = static_cast<double>(r.origin_bytes);
    for (int id : net_.downlink(node)) {
      if (net_.flow(id).src == FlowNetwork::kOrigin) read += net_.Moved(id, now_);
    }
    AgentStats stats;
    stats.origin_bytes_read = static_cast<uint64_t>(read);
    directory_.Heartbeat(agents_.id(node), stats, NowMs());
  }
}

void SimRun::Got(int node, int chunk) {
  if (!swarm_.Add(node, chunk)) return;
  const size_t c = static_cast<size_t>(chunk);
  if (fetched_at_[c] >= 0 && second_at_[c] < 0 && node != fetched_by_[c]) second_at_[c] = now_;
  if (o_.hand_on > 0) agents_.Copied(node, chunk);
  NodeResult& r = nodes_[static_cast<size_t>(node)];
  if (pulling_[static_cast<size_t>(node)] && !r.killed && swarm_.complete(node)) {
    r.done_s = now_ - r.start_s;
    --live_incomplete_;
  }
}

void SimRun::FlowDone(const FlowNetwork::Flow& f) {
  received_[static_cast<size_t>(f.dst)] += f.bytes;
  if (f.src != FlowNetwork::kOrigin) {
    swarm_.TransferDone(f);
    Got(f.dst, f.chunk);
    return;
  }
  OriginBytes(f.dst, f.bytes);
  fetched_by_[static_cast<size_t>(f.chunk)] = f.dst;
  ++fetches_[static_cast<size_t>(f.chunk)];
  if (fetched_at_[static_cast<size_t>(f.chunk)] < 0)
    fetched_at_[static_cast<size_t>(f.chunk)] = now_;
  Got(f.dst, f.chunk);
  if (o_.peers) {
    agents_.Delivered(f.dst, f.chunk, static_cast<uint64_t>(f.bytes));
  } else {
    --direct_in_flight_[static_cast<size_t>(f.dst)];
    StartDirectFetches(f.dst);
  }
}

void SimRun::Handle(const Event& e) {
  switch (e.kind) {
    case EventKind::kRegister:
      Register(e.node);
      break;
    case EventKind::kPullStart:
      StartPull(e.node);
      break;
    case EventKind::kKill:
      Kill(e.node);
      break;
    case EventKind::kOriginStart:
      if (!nodes_[static_cast<size_t>(e.node)].killed) {
        net_.Start({FlowNetwork::kOrigin, e.node, e.chunk, static_cast<double>(o_.piece_bytes)},
                   now_);
      }
      break;
    case EventKind::kPoll:
      o_.peers ? Poll() : PollDirect();
      events_.Push({now_ + o_.pull_poll_ms / 1000, EventKind::kPoll, -1, -1});
      break;
    case EventKind::kSample:
      Sample();
      events_.Push({now_ + SamplePeriod(), EventKind::kSample, -1, -1});
      break;
    case EventKind::kTrackerTick:
      scheduler_->Tick();
      events_.Push({now_ + o_.tracker_tick_ms / 1000, EventKind::kTrackerTick, -1, -1});
      break;
    case EventKind::kHeartbeats:
      Heartbeats();
      events_.Push({now_ + o_.heartbeat_ms / 1000, EventKind::kHeartbeats, -1, -1});
      break;
  }
}

bool SimRun::Finished() const { return live_incomplete_ == 0 && pulls_waiting_ == 0; }

SimResult SimRun::Run() {
  const auto wall_start = std::chrono::steady_clock::now();
  Schedule();
  const double limit =
      o_.max_tlb * (t_lb_ + static_cast<double>(o_.model_bytes()) / o_.origin_bytes_per_s) +
      (o_.scenario == Scenario::kStaggered ? std::max(o_.stagger_window_s, t_lb_) : 0);
  SimResult result;
  while (!Finished()) {
    const double te =
        events_.empty() ? std::numeric_limits<double>::infinity() : events_.next_time();
    const double tf = net_.NextFinish();
    const double t = std::min(te, tf);
    if (t > limit) {
      result.timed_out = true;
      break;
    }
    now_ = t;
    if (tf <= te) {
      FlowDone(net_.PopFinished());
    } else {
      Handle(events_.Pop());
    }
    ++events_handled_;
    // Answers to fetch orders run the scheduler's continuations, which may
    // send more orders; then idle slots take new pieces.
    if (agents_.TakeAnswered()) wait_scope_.poll();
    swarm_.StartTransfers(now_);
  }
  Sample();  // the last completions
  result.options = o_;
  result.nodes = nodes_;
  for (size_t n = 0; n < nodes_.size(); ++n) result.nodes[n].deciles_s = progress_[n].deciles_s;
  result.origin_bytes = origin_bytes_;
  result.origin_cut_bytes = origin_cut_bytes_;
  for (uint32_t n : fetches_) result.chunks_refetched += n > 1 ? 1 : 0;
  std::vector<double> seconds;
  for (size_t c = 0; c < second_at_.size(); ++c) {
    if (second_at_[c] >= 0) seconds.push_back(second_at_[c] - fetched_at_[c]);
  }
  if (!seconds.empty()) {
    std::sort(seconds.begin(), seconds.end());
    result.second_copy_p50_s = seconds[seconds.size() / 2];
    result.second_copy_max_s = seconds.back();
  }
  result.warm_origin_bytes = warm_origin_bytes_;
  result.warm_s = warm_s_;
  result.peer_bytes = swarm_.peer_bytes();
  result.origin_deciles_s = origin_progress_.deciles_s;
  result.fetch_orders = metrics_.fetch_orders;
  result.takeovers = metrics_.takeovers;
  result.hand_on_orders = agents_.hand_on_orders();
  result.end_s = now_;
  result.events = events_handled_;
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

Result<SimResult> Simulate(const SimOptions& options) {
  SHOAL_RETURN_IF_ERROR(options.Validate());
  SimRun run(options);
  return run.Run();
}

}  // namespace shoal::sim
