// AgentSession.announceBatch: an agent's swarm changes, all at once.
//
// Each entry is checked as GET /announce checks an announce (the torrent
// must be a file of a published version in a namespace the agent's token
// may read; a new swarm or peer must fit the swarm limits) and recorded in
// the SwarmStore as held by the agent's session: no TTL, released when the
// session ends. A refused entry gets its reason in its reply; the others
// are recorded all the same. Leaving a swarm (state stopped) needs no
// access: it only removes the session's own peer.
#ifndef SHOAL_TRACKER_SWARM_BATCH_H_
#define SHOAL_TRACKER_SWARM_BATCH_H_

#include <cstdint>
#include <string>

#include "shoal/proto/tracker.capnp.h"
#include "shoal/token.h"
#include "swarm/announce_handler.h"
#include "swarm/swarm_store.h"

namespace shoal::tracker {

// The most entries one batch may carry; a longer one fails as a whole.
constexpr size_t kMaxSwarmBatch = 4096;

// Who sends a batch: one registered agent's session.
struct SwarmSender {
  const TokenClaims& token;  // the agent's, verified at registration
  uint64_t holder;           // nonzero, unique to the session (SwarmStore::Release)
  std::string agent_id;
  PeerAddress ip;  // the session's connection address: the peer's address
};

// Answers one announceBatch into `out`. Throws InvalidArgument (through
// the RPC) when there are more than kMaxSwarmBatch entries.
void AnswerSwarmBatch(const AnnounceDeps& d, const SwarmSender& who,
                      capnp::List<proto::SwarmEntry>::Reader entries,
                      proto::AgentSession::AnnounceBatchResults::Builder out);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_SWARM_BATCH_H_
