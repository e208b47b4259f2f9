// OriginTurn: where this agent stands for a chunk while the tracker is away.
//
// Every agent ranks the live members of the last ring it saw the same way,
// so when an owner does not deliver, the next in rank takes over first, then
// the next, one at a time, and a dead owner costs about one extra fetch
// rather than one per waiting agent.
#ifndef SHOAL_AGENT_DAEMON_ORIGIN_TURN_H_
#define SHOAL_AGENT_DAEMON_ORIGIN_TURN_H_

#include <cstddef>
#include <string>

#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"

namespace shoal {

enum class OriginRole { kNoRing, kOwner, kOther };

struct OriginTurn {
  OriginRole role;
  size_t rank;  // this agent's place in the chunk's ranking; 0 = owner
};

// `ring` may be null (no ring seen yet); `self_id` empty before registering.
OriginTurn TurnFor(const HashRing* ring, const std::string& self_id, const ChunkId& chunk);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_ORIGIN_TURN_H_
