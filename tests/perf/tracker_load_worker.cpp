// tracker_load's Worker: one kj event loop that ramps its share of the
// agents up, times their requests, and drives the steady load's needs and
// churn.
#include <kj/async-io.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "perf/tracker_load.h"
#include "proto/rpc_tls.h"

namespace shoal::tracker_load {

void Worker::Run() {
  auto io = kj::setupAsyncIo();
  io_ = &io;
  const Options& o = shared_.o;
  for (int i = first_; i < end_; i += stride_) {
    auto a = std::make_unique<Agent>();
    a->index = i;
    a->leecher = std::fmod(i * 0.618033988749, 1.0) < o.leechers;
    agents_.push_back(std::move(a));
  }
  tasks_ = kj::heap<kj::TaskSet>(error_log_);
  for (int k = 0; k < kJoinsInFlight; ++k) JoinNext();
  // The generator's own loop lag: a reply that arrives while the loop is
  // late waits as long before it is timed, so this is the part of the
  // latencies that is the generator's, not the tracker's.
  tasks_->add(SampleLag());
  Tick().wait(io.waitScope);
  tasks_ = nullptr;
  pending_join_.clear();
  for (auto& a : agents_) a->Drop();
  io_ = nullptr;
}

void Worker::Record(Type t, Clock::time_point start) {
  const float ms = static_cast<float>(Since(start));
  stats_.ms[phase()][t].push_back(ms);
  if (kSlowMs > 0 && ms > kSlowMs && phase() == 1) {
    const double sent = std::chrono::duration<double, std::milli>(start - kProcessStart).count();
    stats_.slow.push_back({sent, t, ms});
  }
}

void Worker::Failed(Type t, const kj::Exception& e) {
  stats_.errors[phase()][t]++;
  stats_.last_error = std::string(kTypeNames[t]) + ": " + e.getDescription().cStr();
  std::string kind = stats_.last_error.substr(0, 80);
  auto agent = kind.find("load-");
  if (agent != std::string::npos) kind = kind.substr(0, agent);
  stats_.error_kinds[kind]++;
}

// Ramp: starts the next agent that has not joined yet.
void Worker::JoinNext() {
  if (next_join_ >= agents_.size()) return;
  Agent& a = *agents_[next_join_++];
  Start(a, [this] { JoinNext(); });
}

// Connects, registers, announces, then lives until dropped.
void Worker::Start(Agent& a, std::function<void()> joined) {
  const auto& trackers = shared_.o.trackers;
  TrackerEndpoint endpoint;
  endpoint.address = trackers[static_cast<size_t>(a.index) % trackers.size()];
  pending_join_[a.index] = std::move(joined);
  a.calls = kj::heap<kj::TaskSet>(error_log_);
  a.life = DialTracker(*io_->provider, endpoint)
               .then([this, &a](kj::Own<kj::AsyncIoStream> stream) {
                 return Register(a, kj::mv(stream));
               })
               .then([this, &a](uint32_t heartbeat_ms) {
                 // As shoald: the whole ring, if the agent follows it.
                 kj::Promise<void> ring =
                     a.Follows(shared_.o) ? FollowRing(a) : kj::Promise<void>(kj::READY_NOW);
                 return ring.then([heartbeat_ms] { return heartbeat_ms; });
               })
               .then([this, &a](uint32_t heartbeat_ms) {
                 return Announce(a, false).then([this, &a, heartbeat_ms](uint32_t interval_ms) {
                   return Live(a, heartbeat_ms, interval_ms);
                 });
               })
               .then([this, &a]() { LostAgent(a); },
                     [this, &a](kj::Exception&& e) {
                       stats_.last_error = e.getDescription().cStr();
                       LostAgent(a);
                     })
               .eagerlyEvaluate(nullptr);
}

void Worker::LostAgent(Agent& a) {
  // The connection ended without our asking: count it and come back
  // after shoald's backoff (TrackerLink::Run).
  if (!a.up) JoinedOrFailed(a);
  stats_.unexpected_drops++;
  a.up = false;
  const uint32_t wait = a.backoff_ms;
  a.backoff_ms = std::min<uint32_t>(a.backoff_ms * 2, 10000);
  tasks_->add(After(wait).then([this, &a] {
    a.Drop();
    if (!shared_.stop) Start(a, [] {});
  }));
}

void Worker::JoinedOrFailed(Agent& a) {
  auto it = pending_join_.find(a.index);
  if (it == pending_join_.end()) return;
  auto f = std::move(it->second);
  pending_join_.erase(it);
  f();
}

kj::Promise<void> Worker::SampleLag() {
  if (shared_.stop) return kj::READY_NOW;
  const auto due = Clock::now() + std::chrono::milliseconds(10);
  return After(10).then([this, due] {
    stats_.loop_lag_ms[phase()].push_back(static_cast<float>(
        std::max(0.0, -std::chrono::duration<double, std::milli>(due - Clock::now()).count())));
    return SampleLag();
  });
}

// Every 100 ms: this thread's share of needs and churn.
kj::Promise<void> Worker::Tick() {
  if (shared_.stop) return kj::READY_NOW;
  const Options& o = shared_.o;
  const double n = static_cast<double>(agents_.size());
  if (phase() >= 1) {
    need_credit_ += o.need_rate * n * 0.1;
    churn_credit_ += o.churn_rate * n * 0.1;
  }
  std::uniform_int_distribution<size_t> pick(0, agents_.size() - 1);
  for (; need_credit_ >= 1; need_credit_ -= 1) {
    Agent& a = *agents_[pick(rng_)];
    if (a.up) Need(a);
  }
  for (; churn_credit_ >= 1; churn_credit_ -= 1) {
    Agent& a = *agents_[pick(rng_)];
    // Worker 0's first two agents serve the dead-agent probe.
    if (!a.up || a.index < 2 * o.threads) continue;
    stats_.churned++;
    a.Drop();
    tasks_->add(After(o.churn_down_ms).then([this, &a] {
      if (!shared_.stop) Start(a, [] {});
    }));
  }
  return After(100).then([this] { return Tick(); });
}

}  // namespace shoal::tracker_load
