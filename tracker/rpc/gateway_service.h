// The Gateway Cap'n Proto service: the front door of every RPC connection.
// It verifies tokens and hands out a Registry (authenticate) or an agent's
// AgentSession (registerAgent), and serves the manifest signing key.
#ifndef SHOAL_TRACKER_GATEWAY_SERVICE_H_
#define SHOAL_TRACKER_GATEWAY_SERVICE_H_

#include <kj/function.h>

#include <cstdint>
#include <string>

#include "rpc/registry_service.h"
#include "shoal/proto/tracker.capnp.h"
#include "swarm/announce_handler.h"

namespace shoal {
class ManifestSigner;
}  // namespace shoal

namespace shoal::tracker {

class AgentControls;
class AgentDirectory;
class PeerCerts;
class RingSnapshots;
class TokenVerifier;
struct TrackerMetrics;

// What a Gateway touches. Every reference must outlive every connection.
// How many times the heartbeat interval an agent registering as `away`
// (this tracker is not its home in a fleet) is given: it is dropped after
// three of those missed.
constexpr int64_t kAwayHeartbeatFactor = 3;

struct GatewayDeps {
  const TokenVerifier& tokens;  // authenticate and registerAgent
  const ManifestSigner& signer;
  const PeerCerts& peer_certs;  // registerAgent issues the agent's first one
  TrackerMetrics& metrics;
  AgentDirectory& agents;     // registerAgent joins it
  AgentControls& controls;    // ... and attaches the agent's control capability
  const uint16_t& http_port;  // told to agents; set once the HTTP server listens
  RegistryDeps registry;      // for the Registry authenticate returns
  AnnounceDeps announce;      // for the announces agents relay over their sessions
  RingSnapshots& ring;        // the whole ring, for a new session's ring()
};

// The capability a new RPC connection from `peer_address` (its IP)
// receives. `on_authenticated` runs each time authenticate or registerAgent
// accepts a token, on the connection's loop; the listener raises the connection's
// limits then.
// `timer` is the connection's loop's.
kj::Own<proto::Gateway::Server> NewGateway(const GatewayDeps& deps, const std::string& peer_address,
                                           kj::Timer& timer, kj::Function<void()> on_authenticated);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_GATEWAY_SERVICE_H_
