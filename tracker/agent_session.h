// The AgentSession Cap'n Proto service: one registered agent's membership.
// While it lives the agent is on the ring and reachable through its control
// capability; dropping it (the connection closing) removes the agent.
#ifndef SHOAL_TRACKER_AGENT_SESSION_H_
#define SHOAL_TRACKER_AGENT_SESSION_H_

#include <string>

#include "shoal/proto/tracker.capnp.h"
#include "shoal/token.h"
#include "shoal/token_revocations.h"

namespace shoal::tracker {

class AgentControls;
class AgentDirectory;
class PeerCerts;

// The session of `agent_id`, which has joined `agents` already; attaches
// `control` to `controls` until dropped, renews the agent's peer
// certificate from `certs`, and brings each heartbeat the revocations the
// agent has not seen from `revocations`. All four must outlive it. Once the
// agent's own token (`agent_token`, verified at registration) is revoked,
// its heartbeats are refused, so it leaves the ring and cannot register
// again.
kj::Own<proto::AgentSession::Server> NewAgentSession(AgentDirectory& agents,
                                                     AgentControls& controls,
                                                     const PeerCerts& certs,
                                                     const RevocationList& revocations,
                                                     TokenClaims agent_token, std::string agent_id,
                                                     proto::AgentControl::Client control);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_AGENT_SESSION_H_
