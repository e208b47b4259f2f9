#include "scheduler/fetch_scheduler.h"

#include <algorithm>
#include <stdexcept>

#include "proto/kj_status.h"
#include "shoal/log.h"
#include "shoal/missing_chunk_policy.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

// How many queued entries one dispatch pass looks at, so a long queue whose
// head waits on busy agents costs bounded time.
constexpr size_t kScanLimit = 4096;
// How long a chunk no owner could fetch is reported failed.
constexpr int64_t kFailedMemoryMs = 10000;

}  // namespace

FetchScheduler::FetchScheduler(FetchPolicy policy, AgentDirectory& agents, AgentOrders& orders,
                               VersionChunkSource& chunk_source, TrackerMetrics& metrics,
                               NowMsFn now_ms)
    : policy_(policy),
      origin_budget_(policy.origin_budget),
      agents_(agents),
      orders_(orders),
      chunk_source_(chunk_source),
      metrics_(metrics),
      now_ms_(now_ms ? std::move(now_ms) : NowMsFn(&NowMs)),
      pacer_(static_cast<int>(policy.fetches_per_agent)) {}

FetchScheduler::~FetchScheduler() { *alive_ = false; }

void FetchScheduler::SetOriginBudget(uint32_t budget) {
  if (budget < 1) throw std::invalid_argument("FetchScheduler::SetOriginBudget: budget < 1");
  if (budget == origin_budget_) return;
  const bool raised = budget > origin_budget_;
  origin_budget_ = budget;
  if (raised) Dispatch();
}

int64_t FetchScheduler::takeover_ms(int running) const {
  if (fetch_ms_.empty()) return MissingChunkPolicy::OrderTakeoverMs(std::nullopt);
  const double slowest = *std::max_element(fetch_ms_.begin(), fetch_ms_.end());
  return MissingChunkPolicy::OrderTakeoverMs(
      static_cast<int64_t>(slowest * std::max(1, running) + 0.5));
}

int64_t FetchScheduler::TakeoverMsFor(const std::string& agent) const {
  auto it = per_agent_.find(agent);
  return takeover_ms(it == per_agent_.end() ? 1 : it->second);
}

Result<std::shared_ptr<const ChunkSet>> FetchScheduler::VersionChunks(const FetchTarget& t) {
  std::string key = t.ns + "/" + t.name + ":" + t.version.ToHex();
  for (auto it = chunk_sets_.begin(); it != chunk_sets_.end(); ++it) {
    if (it->first != key) continue;
    auto found = std::move(*it);
    chunk_sets_.erase(it);
    chunk_sets_.push_back(found);
    return found.second;
  }
  Result<std::shared_ptr<const ChunkSet>> set = chunk_source_.Load(t);
  if (!set.ok()) return set.status();
  constexpr size_t kKeep = 16;
  if (chunk_sets_.size() >= kKeep) chunk_sets_.erase(chunk_sets_.begin());
  chunk_sets_.push_back({key, *set});
  return *set;
}

std::shared_ptr<const HashRing> FetchScheduler::Ring() {
  if (ring_ != nullptr && agents_.epoch() == ring_->epoch()) return ring_;
  const auto start = std::chrono::steady_clock::now();
  // A ring of hundreds follows at once; a bigger one when its time has come.
  constexpr size_t kPacedFrom = 512;
  if (ring_ != nullptr && ring_->size() >= kPacedFrom && start < ring_next_build_) return ring_;
  // The changes since, from the directory's log; the whole membership when
  // the log no longer holds them.
  RingChangeList log;
  if (ring_ != nullptr && agents_.RingChanges(ring_->epoch(), now_ms_(), log)) {
    for (RingChange& c : log.changes) c.weight = std::max<uint64_t>(1, c.weight);
    ring_ = std::make_shared<const HashRing>(ring_->Apply(log.changes, log.epoch));
  } else {
    uint64_t epoch = 0;
    std::shared_ptr<const std::vector<RingMember>> all = agents_.RingMembers(now_ms_(), &epoch);
    std::vector<RingMember> members;
    members.reserve(all->size());
    for (const RingMember& a : *all) members.push_back({a.id, std::max<uint64_t>(1, a.weight)});
    ring_ = std::make_shared<const HashRing>(std::move(members), epoch);
  }
  const auto end = std::chrono::steady_clock::now();
  ring_next_build_ = end + 19 * (end - start);
  return ring_;
}

NeedReply FetchScheduler::Need(const FetchTarget& target, const std::vector<ChunkId>& chunks) {
  NeedReply reply;
  int64_t now = now_ms_();
  for (const ChunkId& c : chunks) {
    auto it = entries_.find(c);
    if (it != entries_.end()) {
      Entry& e = it->second;
      if (e.klass != 0 && !e.in_flight) {  // a warm-only chunk somebody now waits for
        queue_.erase({{e.klass, e.seq}, c});
        e.klass = 0;
        queue_.insert({{e.klass, e.seq}, c});
      }
      e.klass = 0;
      ++reply.pending;
      continue;
    }
    auto d = delivered_.find(c);
    if (d != delivered_.end() && now - d->second < policy_.fetch_done_grace_ms) {
      ++reply.recent;
      continue;
    }
    auto f = failed_.find(c);
    if (f != failed_.end() && now - f->second.first < kFailedMemoryMs) {
      reply.failed.push_back({c, f->second.second});
      continue;
    }
    Entry e;
    e.chunk = c;
    e.target = target;
    e.klass = 0;
    Enqueue(std::move(e));
    ++reply.queued;
  }
  metrics_.need_requests++;
  metrics_.need_chunks += chunks.size();
  Dispatch();
  return reply;
}

void FetchScheduler::Warm(const FetchTarget& target, const std::vector<ChunkId>& chunks,
                          std::shared_ptr<WarmWatch> watch) {
  watch->total = static_cast<uint32_t>(chunks.size());
  for (const ChunkId& c : chunks) {
    auto it = entries_.find(c);
    if (it != entries_.end()) {
      it->second.watches.push_back(watch);
      continue;
    }
    Entry e;
    e.chunk = c;
    e.target = target;
    e.klass = 1;
    e.watches.push_back(watch);
    Enqueue(std::move(e));
  }
  if (watch->total == 0 && watch->finished) watch->finished->fulfill();
  Dispatch();
}

void FetchScheduler::Enqueue(Entry e) {
  e.seq = next_seq_++;
  auto held = holders_.find(e.chunk);
  if (held != holders_.end()) e.holder = held->second;
  failed_.erase(e.chunk);
  queue_.insert({{e.klass, e.seq}, e.chunk});
  ChunkId c = e.chunk;
  entries_.emplace(c, std::move(e));
}

void FetchScheduler::PublishGauges() {
  metrics_.fetch_queue = queue_.size();
  metrics_.fetches_in_flight = in_flight_;
  metrics_.takeover_timeout_ms = takeover_ms();
  metrics_.replicas_queued = replica_keys_.size();
  if (ring_ != nullptr) metrics_.ring_members = ring_->size();
}

std::function<bool(const std::string&)> FetchScheduler::ConnectedFilter() const {
  return [this](const std::string& agent) { return orders_.Connected(agent); };
}

void FetchScheduler::Dispatch() {
  struct Publish {  // the gauges, however this returns
    FetchScheduler* s;
    ~Publish() { s->PublishGauges(); }
  } publish{this};
  DispatchReplicas();
  const uint32_t budget = origin_budget_;
  if (in_flight_ >= budget || queue_.empty()) return;
  std::shared_ptr<const HashRing> ring = Ring();
  if (ring->size() == 0) return;
  const std::function<bool(const std::string&)> connected = ConnectedFilter();
  size_t scanned = 0;
  for (auto it = queue_.begin(); it != queue_.end() && in_flight_ < budget && scanned < kScanLimit;
       ++scanned) {
    Entry& e = entries_.at(it->second);
    std::string agent;
    if (e.attempt == 0 && !e.holder.empty() && connected(e.holder)) {
      agent = e.holder;  // it answers from its cache; a takeover goes by the ring
    } else {
      std::vector<std::string> ranked = ring->Owners(
          e.chunk, std::min<int>(e.attempt + 1, static_cast<int>(ring->size())), connected);
      if (ranked.empty()) return;  // no agent on the ring has a control connection
      agent = ranked[static_cast<size_t>(e.attempt) % ranked.size()];
    }
    if (per_agent_[agent] >= AgentCap(agent)) {
      ++it;
      continue;
    }
    it = queue_.erase(it);
    if (!Send(e, agent)) Requeue(e, "agent " + agent + " has no control connection");
  }
}

int FetchScheduler::AgentCap(const std::string& agent) const {
  return policy_.pace_per_agent ? pacer_.Cap(agent) : static_cast<int>(policy_.fetches_per_agent);
}

bool FetchScheduler::Send(Entry& e, const std::string& agent) {
  if (!orders_.Connected(agent)) return false;
  e.in_flight = true;
  e.order = next_order_++;
  e.agent = agent;
  e.sent_ms = now_ms_();
  ++in_flight_;
  ++per_agent_[agent];
  metrics_.fetch_orders++;
  metrics_.fetch_order_chunks++;
  ChunkId chunk = e.chunk;
  uint64_t order = e.order;
  int64_t sent = e.sent_ms;
  const OrderPacer::Ticket ticket = pacer_.Start(agent, sent);
  std::shared_ptr<bool> alive = alive_;
  tasks_.add(orders_.Fetch(agent, e.target, chunk, e.attempt > 0)
                 .then(
                     [this, alive, chunk, order, agent, ticket, sent](FetchOutcome r) {
                       if (*alive) {
                         OnDone(chunk, order, agent, ticket, Status::OK(), r, now_ms_() - sent);
                       }
                     },
                     [this, alive, chunk, order, agent, ticket, sent](kj::Exception&& ex) {
                       if (*alive) {
                         OnDone(chunk, order, agent, ticket,
                                StatusFromException(ex, "agent " + agent), FetchOutcome{},
                                now_ms_() - sent);
                       }
                     }));
  return true;
}

void FetchScheduler::OnDone(const ChunkId& chunk, uint64_t order, const std::string& agent,
                            const OrderPacer::Ticket& ticket, Status status, FetchOutcome outcome,
                            int64_t ms) {
  const uint32_t fetched = outcome.fetched;
  const uint64_t bytes = outcome.bytes;
  --in_flight_;
  if (--per_agent_[agent] <= 0) per_agent_.erase(agent);
  const OrderPacer::Finished done =
      pacer_.Done(agent, ticket, now_ms_(), status.ok() && fetched > 0, bytes);
  if (policy_.pace_per_agent && done.new_cap != 0) {
    Log(LogLevel::kDebug, "fetch.agent_cap",
        {{"agent", agent}, {"cap", done.new_cap}, {"ms", ms}, {"bytes", bytes}});
  }
  auto it = entries_.find(chunk);
  if (status.ok()) {
    if (fetched > 0) {
      // A config file's fetch says nothing of how long a shard's chunk takes.
      // Timed per order: an agent running two at once takes twice as long
      // over each when its link is what limits it.
      if (bytes >= kTimedFetchMinBytes) {
        fetch_ms_.push_back(static_cast<double>(ms) / done.beside);
        if (fetch_ms_.size() > kTimingWindow) fetch_ms_.pop_front();
      }
      metrics_.origin_fetch_bytes += bytes;
    }
    if (it != entries_.end()) {
      if (fetched > 0)
        (it->second.attempt == 0 ? metrics_.owner_fetches : metrics_.takeover_fetches)++;
      Log(LogLevel::kDebug, "fetch.done",
          {{"chunk", chunk.ShortHex()},
           {"agent", agent},
           {"attempt", it->second.attempt},
           {"ms", ms},
           {"bytes", bytes}});
      QueueReplicas(it->second, agent);
      RememberHolder(chunk, agent);
      Finish(it->second, true, fetched, bytes);
    }
  } else {
    metrics_.fetch_order_failures++;
    Log(LogLevel::kWarn, "fetch.failed",
        {{"chunk", chunk.ShortHex()}, {"agent", agent}, {"error", status.ToString()}});
    // Only the current order's failure moves the chunk on; an order already
    // superseded by a takeover has nothing left to do.
    if (it != entries_.end() && it->second.in_flight && it->second.order == order) {
      it->second.last_error = status.ToString();
      Requeue(it->second, status.ToString());
    }
  }
  Dispatch();
}

void FetchScheduler::Requeue(Entry& e, const std::string& why) {
  e.in_flight = false;
  ++e.attempt;
  if (e.attempt >= kMaxAttempts) {
    Log(LogLevel::kWarn, "fetch.gave_up",
        {{"chunk", e.chunk.ShortHex()}, {"attempts", e.attempt}, {"error", why}});
    failed_[e.chunk] = {now_ms_(), e.last_error.empty() ? why : e.last_error};
    Finish(e, false, 0, 0);
    return;
  }
  metrics_.takeovers++;
  Log(LogLevel::kInfo, "fetch.takeover",
      {{"chunk", e.chunk.ShortHex()}, {"attempt", e.attempt}, {"why", why}});
  queue_.insert({{e.klass, e.seq}, e.chunk});  // keeps its place in line
}

void FetchScheduler::RememberHolder(const ChunkId& chunk, const std::string& agent) {
  if (!holders_.insert_or_assign(chunk, agent).second) return;  // known: keeps its place
  holder_order_.push_back(chunk);
  while (holders_.size() > kMaxHolders) {
    holders_.erase(holder_order_.front());
    holder_order_.pop_front();
  }
}

void FetchScheduler::Finish(Entry& e, bool ok, uint32_t fetched, uint64_t bytes) {
  if (!e.in_flight) queue_.erase({{e.klass, e.seq}, e.chunk});
  std::vector<std::shared_ptr<WarmWatch>> watches = std::move(e.watches);
  ChunkId chunk = e.chunk;
  entries_.erase(chunk);  // `e` is gone from here on
  if (ok) delivered_[chunk] = now_ms_();
  for (const auto& w : watches) {
    ++w->done;
    if (!ok) ++w->failed;
    w->fetched += fetched;
    w->bytes += bytes;
    if (w->on_change) w->on_change();
    if (w->done == w->total && w->finished) w->finished->fulfill();
  }
}

void FetchScheduler::QueueReplicas(const Entry& e, const std::string& deliverer) {
  if (policy_.replicas <= 1) return;
  const std::function<bool(const std::string&)> connected = ConnectedFilter();
  for (const std::string& owner :
       Ring()->Owners(e.chunk, static_cast<int>(policy_.replicas), connected)) {
    if (owner == deliverer || replica_keys_.size() >= kMaxReplicaQueue) continue;
    if (!replica_keys_.insert({owner, e.chunk}).second) continue;  // already ordered
    replicas_.push_back({owner, e.target, e.chunk});
  }
}

void FetchScheduler::DispatchReplicas() {
  size_t scanned = 0;
  for (auto it = replicas_.begin(); it != replicas_.end() && scanned < kScanLimit; ++scanned) {
    if (!orders_.Connected(it->agent)) {  // gone: the ring no longer counts it
      replica_keys_.erase({it->agent, it->chunk});
      it = replicas_.erase(it);
      continue;
    }
    if (replicas_per_agent_[it->agent] >= kReplicasPerAgent) {
      ++it;
      continue;
    }
    Replica r = std::move(*it);
    it = replicas_.erase(it);
    SendReplica(r.agent, r.target, r.chunk);
  }
}

void FetchScheduler::SendReplica(const std::string& agent, const FetchTarget& target,
                                 const ChunkId& chunk) {
  kj::Promise<void> sent = orders_.Replicate(agent, target, chunk);
  ++replicas_per_agent_[agent];
  metrics_.replica_orders++;
  std::shared_ptr<bool> alive = alive_;
  auto done = [this, alive, agent, chunk](const Status& status) {
    if (!*alive) return;
    if (--replicas_per_agent_[agent] <= 0) replicas_per_agent_.erase(agent);
    replica_keys_.erase({agent, chunk});
    if (!status.ok()) {
      metrics_.replica_failures++;
      Log(LogLevel::kWarn, "fetch.replica_failed",
          {{"chunk", chunk.ShortHex()}, {"agent", agent}, {"error", status.ToString()}});
    }
    Dispatch();
  };
  tasks_.add(sent.then(
      [done]() { done(Status::OK()); },
      [done, agent](kj::Exception&& ex) { done(StatusFromException(ex, "agent " + agent)); }));
}

void FetchScheduler::Tick() {
  int64_t now = now_ms_();
  std::vector<ChunkId> late;
  for (auto& [chunk, e] : entries_) {
    if (!e.in_flight || now - e.sent_ms <= TakeoverMsFor(e.agent)) continue;
    // An owner whose reads from the origin still move is slow, not stuck
    // (its link is shared with the peers it serves and downloads from): a
    // second order would read the chunk twice. It is waited for up to the
    // longest timeout.
    if (now - e.sent_ms <= MissingChunkPolicy::kMaxOrderTakeoverMs &&
        agents_.ReadingOrigin(e.agent, now)) {
      continue;
    }
    late.push_back(chunk);
  }
  std::shared_ptr<const HashRing> ring = Ring();
  const std::function<bool(const std::string&)> connected = ConnectedFilter();
  for (const ChunkId& c : late) {
    Entry& e = entries_.at(c);
    // The late order stays in flight (and counted) until it answers; the
    // next owner gets a new one. When the next owner is the agent already
    // holding it (a ring of one), a second order would only fetch again.
    std::vector<std::string> next = ring->Owners(
        e.chunk, std::min<int>(e.attempt + 2, static_cast<int>(ring->size())), connected);
    if (!next.empty() && next[static_cast<size_t>(e.attempt + 1) % next.size()] == e.agent)
      continue;
    e.last_error = "no answer from " + e.agent + " in " + std::to_string(now - e.sent_ms) + " ms";
    Requeue(e, e.last_error);
  }
  for (auto it = delivered_.begin(); it != delivered_.end();) {
    it = now - it->second >= policy_.fetch_done_grace_ms ? delivered_.erase(it) : std::next(it);
  }
  for (auto it = failed_.begin(); it != failed_.end();) {
    it = now - it->second.first >= kFailedMemoryMs ? failed_.erase(it) : std::next(it);
  }
  Dispatch();
}

kj::Promise<void> FetchScheduler::Run(kj::Timer& timer, kj::Duration period) {
  return timer.afterDelay(period).then([this, &timer, period] {
    Tick();
    return Run(timer, period);
  });
}

}  // namespace shoal::tracker
