// TurnFor: where this agent stands for a chunk (its OriginTurn) while the tracker is away.
//
// Every agent ranks the live members of the last ring it saw the same way,
// so when an owner does not deliver, the next in rank takes over first, then
// the next, one at a time, and a dead owner costs about one extra fetch
// rather than one per waiting agent. MissingChunkPolicy says when each
// turn comes.
#ifndef SHOAL_AGENT_DAEMON_ORIGIN_TURN_H_
#define SHOAL_AGENT_DAEMON_ORIGIN_TURN_H_

#include <cstddef>
#include <string>

#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"
#include "shoal/missing_chunk_policy.h"

namespace shoal {

// `ring` may be null (no ring seen yet); `self_id` empty before registering.
OriginTurn TurnFor(const HashRing* ring, const std::string& self_id, const ChunkId& chunk);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_ORIGIN_TURN_H_
