// TrackerFleet: the agent's memberships with every tracker of its fleet
// (--tracker a:7400,b:7400,c:7400), and the announce relay they share.
//
// The agent registers with each tracker on a link of its own
// (tracker_link.h), so every tracker knows every agent: each computes the
// same ring of chunk owners and can order any owner to fetch. Swarms are
// split among the trackers (announce_relay.h). One tracker alone is a
// fleet of one.
//
// Each agent ranks the trackers by rendezvous hashing of its node name and
// their addresses; the first is its home. It tells the others it is away,
// so they ask for a heartbeat a third as often (gateway_service.h,
// kAwayHeartbeatFactor): with N trackers each hears about 1/N of the
// agents at the full rate, not all of them.
//
// What the rest of the agent reads comes from the primary link, the first
// one registered in that ranking (the home, while it is up): the ring, the
// agent's id and epoch, and the token revocations. While work uses the
// ring, every link follows it on its heartbeats (an away one less often),
// so the one that takes over when the primary is lost holds the whole
// membership already, a few seconds old at most; its list of revocations
// replaces the old one whole.
//
// An idle agent does not follow the ring: the ring's changes are the
// membership's churn, and sending them to every agent of a large fleet on
// every heartbeat would cost the trackers churn times the fleet. Asking for
// ring() is what work does (a pull's poll, a fetch order): the links then
// follow for kRingFollowMs after the last ask, and the first ask after a
// quiet spell brings each link's heartbeat forward, so the ring is caught
// up (a delta, or the whole ring) within a round trip.
//
// Thread-safety: StartRelay, StopRelay and Run on the kj event loop's
// thread; the accessors from any thread.
#ifndef SHOAL_AGENT_DAEMON_TRACKER_FLEET_H_
#define SHOAL_AGENT_DAEMON_TRACKER_FLEET_H_

#include <kj/async-io.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/announce_relay.h"
#include "daemon/tracker_link.h"

namespace shoal {

class TrackerFleet {
 public:
  // One link per address of options.tracker. InvalidArgument-free: an
  // empty list was refused with the options.
  TrackerFleet(kj::AsyncIoContext& io, const AgentOptions& options, uint16_t peer_port,
               ControlHandlers handlers, RevocationList& revocations);

  // Listens for announces on 127.0.0.1 (a free port). Call before Run().
  Status StartRelay() { return relay_.Start(); }
  // Answers pending announces with a failure and stops listening.
  void StopRelay() { relay_.Stop(); }
  // Runs every link until the promise is dropped.
  kj::Promise<void> Run();

  // Registered with at least one tracker.
  bool registered() const;
  // Links registered now, and in all.
  size_t registered_count() const;
  size_t size() const { return links_.size(); }
  // The primary link's: the ring epoch, the agent's id, the ring of chunk
  // owners (empty until the first registration; kept while none answers).
  uint64_t epoch() const;
  std::string agent_id() const;
  // Asking is using: see the file comment. The ring may be behind for the
  // first round trip after a quiet spell.
  std::shared_ptr<const HashRing> ring() const;
  // Whether the links follow the ring now (work asked for it lately).
  bool following_ring() const;
  // ring(), after waiting up to `wait` for the primary link to catch up
  // (a link idle until now needs a round trip or two); the ring held, stale
  // or null, if it does not. For work on a thread of its own that needs
  // the ring at once: a fetch order handing chunks on, a replica order.
  // Blocks: never on the event loop.
  std::shared_ptr<const HashRing> CurrentRing(std::chrono::milliseconds wait) const;
  // How long the links follow the ring after work last asked for it.
  static constexpr int64_t kRingFollowMs = 60000;
  // Where this agent's torrents announce; empty until StartRelay.
  std::string announce_url() const { return relay_.url(); }
  uint64_t announces_answered_locally() const { return relay_.answered_locally(); }
  uint64_t swarm_changes_sent() const { return relay_.changes_sent(); }

 private:
  // The first registered link in ranking order, or the home if none is.
  const TrackerLink& Primary() const;

  std::vector<std::unique_ptr<TrackerLink>> links_;
  std::vector<size_t> ranking_;  // indices into links_, the home first
  // When work last asked for ring() (steady clock, ms); long ago at first.
  mutable std::atomic<int64_t> ring_asked_ms_{INT64_MIN / 2};
  AnnounceRelay relay_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_TRACKER_FLEET_H_
