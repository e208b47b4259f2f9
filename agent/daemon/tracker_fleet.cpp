#include "daemon/tracker_fleet.h"

#include <chrono>
#include <thread>

#include "daemon/relay_host.h"
#include "daemon/tracker_rank.h"

namespace shoal {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TrackerFleet::TrackerFleet(kj::AsyncIoContext& io, const AgentOptions& options, uint16_t peer_port,
                           ControlHandlers handlers, RevocationList& revocations)
    : relay_(io, options.zone, RelayHost(options.peer_listen), [this] {
        std::vector<SwarmRoute> routes;
        for (const auto& link : links_) {
          routes.push_back({link->address(), link->session()});
        }
        return routes;
      }) {
  const std::vector<std::string> addresses = options.tracker.Addresses();
  ranking_ = RankTrackers(NodeName(options), addresses);
  for (const std::string& address : addresses) {
    const size_t index = links_.size();
    LinkHooks hooks;
    hooks.session_changed = [this] { relay_.SessionsChanged(); };
    hooks.takes_revocations = [this, index] { return &Primary() == links_[index].get(); };
    const bool away = index != ranking_.front();
    hooks.away = [away] { return away; };
    hooks.follows_ring = [this] { return following_ring(); };
    links_.push_back(std::make_unique<TrackerLink>(io, options, options.tracker.At(address),
                                                   peer_port, handlers, revocations, hooks));
  }
}

kj::Promise<void> TrackerFleet::Run() {
  auto runs = kj::heapArrayBuilder<kj::Promise<void>>(links_.size());
  for (auto& link : links_) runs.add(link->Run());
  return kj::joinPromises(runs.finish());
}

const TrackerLink& TrackerFleet::Primary() const {
  for (size_t i : ranking_) {
    if (links_[i]->registered()) return *links_[i];
  }
  return *links_[ranking_.front()];
}

bool TrackerFleet::registered() const { return registered_count() > 0; }

size_t TrackerFleet::registered_count() const {
  size_t n = 0;
  for (const auto& link : links_) n += link->registered() ? 1 : 0;
  return n;
}

uint64_t TrackerFleet::epoch() const { return Primary().epoch(); }

std::string TrackerFleet::agent_id() const {
  std::string id = Primary().agent_id();
  if (!id.empty()) return id;
  for (const auto& link : links_) {
    if (!(id = link->agent_id()).empty()) return id;
  }
  return id;
}

bool TrackerFleet::following_ring() const {
  return SteadyMs() - ring_asked_ms_.load(std::memory_order_relaxed) < kRingFollowMs;
}

std::shared_ptr<const HashRing> TrackerFleet::CurrentRing(std::chrono::milliseconds wait) const {
  ring();  // asking brings an idle link's heartbeat forward
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // Unregistered, no link can catch up: the ring held is all there is.
  while (registered() && !Primary().ring_current() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ring();
}

std::shared_ptr<const HashRing> TrackerFleet::ring() const {
  const int64_t now = SteadyMs();
  const int64_t last = ring_asked_ms_.exchange(now, std::memory_order_relaxed);
  if (now - last >= kRingFollowMs) {
    for (const auto& link : links_) link->CatchUpRing();
  }
  std::shared_ptr<const HashRing> ring = Primary().ring();
  if (ring) return ring;
  for (const auto& link : links_) {
    if ((ring = link->ring())) return ring;
  }
  return ring;
}

}  // namespace shoal
