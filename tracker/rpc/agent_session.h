// The AgentSession Cap'n Proto service: one registered agent's membership.
// While it lives the agent is on the ring and reachable through its control
// capability, and its swarm entries (announceBatch, swarm_batch.h) stay;
// dropping it (the connection closing) removes the agent and all of them.
#ifndef SHOAL_TRACKER_AGENT_SESSION_H_
#define SHOAL_TRACKER_AGENT_SESSION_H_

#include <string>

#include "shoal/proto/tracker.capnp.h"
#include "shoal/token.h"
#include "shoal/token_revocations.h"
#include "swarm/announce_handler.h"

namespace shoal::tracker {

class AgentControls;
class AgentDirectory;
class RingSnapshots;
class PeerCerts;

// What a session touches; every reference must outlive it.
struct AgentSessionDeps {
  AgentDirectory& agents;   // the agent has joined it already
  AgentControls& controls;  // holds the agent's control capability while the session lives
  const PeerCerts& certs;   // renews the agent's peer certificate
  const RevocationList& revocations;  // each heartbeat brings the ones the agent has not seen
  const AnnounceDeps& announce;       // answers the announces the agent relays
  RingSnapshots& ring;                // the whole ring, for a new session's ring()
};

// The session of `agent_id`, connected from `peer_ip`. Once the agent's own
// token (`agent_token`, verified at registration) is revoked, its
// heartbeats are refused, so it leaves the ring and cannot register again.
// A number no other registration in this process has had.
uint64_t NewSessionId();

// `session` is the registration's NewSessionId(), as in its AgentRecord.
kj::Own<proto::AgentSession::Server> NewAgentSession(const AgentSessionDeps& deps,
                                                     TokenClaims agent_token, std::string agent_id,
                                                     uint64_t session, std::string peer_ip,
                                                     proto::AgentControl::Client control);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_AGENT_SESSION_H_
