// OwnersAbove: the peer addresses of a chunk's higher-ranked owners, from
// the ring alone.
//
// A replica order asks this agent, one of a chunk's owners 2..R, to copy a
// chunk that its first owner has just read from the origin. Until a second
// copy is whole, the chunk exists only there: if that owner dies first, the
// origin is read again. The receiver therefore connects to the owners
// ranked above it instead of waiting for the tracker's peer list to name
// them (a list holds a sample of a large swarm). A ring member's ID is
// "name@address:port", the address the tracker saw the agent connect from
// and its peer port, or "name@address:first-last" for an agent with several
// peer sessions (one per port), so no tracker round trip is needed.
#ifndef SHOAL_AGENT_DAEMON_OWNER_PEERS_H_
#define SHOAL_AGENT_DAEMON_OWNER_PEERS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "p2p/file_torrent_id.h"
#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"

namespace shoal {

struct PeerAddress {
  std::string ip;         // as the tracker saw it; IPv6 without brackets
  uint16_t port = 0;      // its first session's listen port
  uint16_t sessions = 1;  // peer sessions, on port and the ports after it

  // The port of the session that carries torrent `id` there.
  uint16_t PortFor(const FileTorrentId& id) const {
    return static_cast<uint16_t>(port + SessionOf(id, sessions));
  }
};

// The address in a ring member ID ("name@10.0.0.5:6881", "name@::1:6881",
// "name@10.0.0.5:6881-6884"); nullopt if the ID names none.
std::optional<PeerAddress> PeerAddressOf(const std::string& member_id);

// Up to `limit` owners of `chunk` ranked above `self_id` on `ring`, best
// first, as peer addresses; the first `limit` owners if `self_id` is not a
// member (the ring this agent saw may be a moment old). Members whose ID
// names no address are skipped.
std::vector<PeerAddress> OwnersAbove(const HashRing& ring, const std::string& self_id,
                                     const ChunkId& chunk, size_t limit);

// Up to `limit` owners of `chunk` ranked just below `self_id` on `ring`, as
// peer addresses; none if `self_id` is not a member.
std::vector<PeerAddress> OwnersBelow(const HashRing& ring, const std::string& self_id,
                                     const ChunkId& chunk, size_t limit);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_OWNER_PEERS_H_
