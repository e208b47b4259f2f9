// What every way of announcing shares: GET /announce (announce_handler.h)
// and an agent's AgentSession.announceBatch (swarm_batch.h) check the same
// torrent access, cap numwant alike and hand peers back in the same
// compact form.
#ifndef SHOAL_TRACKER_ANNOUNCE_POLICY_H_
#define SHOAL_TRACKER_ANNOUNCE_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/token.h"
#include "swarm/swarm_store.h"

namespace shoal::tracker {

class TorrentIndex;

// The most peers one reply lists, whatever numwant asks.
constexpr uint32_t kMaxNumwant = 200;

// The one refusal for a torrent that is unknown and one that is forbidden
// alike: it must not tell whether another namespace holds the file.
constexpr const char* kTorrentRefused =
    "info_hash is not a file of any published version this token may read";

// True if the torrent is a file of a published version in a namespace the
// token may read at `now_ms`.
bool MayAnnounce(TorrentIndex& torrents, const TokenClaims& claims, const InfoHash20& h,
                 int64_t now_ms);

// Appends `peers` as BEP 23 compact IPv4 (6 bytes each) to `v4` and BEP 7
// compact IPv6 (18 bytes each) to `v6`; peers without an address are skipped.
void CompactPeers(const std::vector<PeerEndpoint>& peers, std::string* v4, std::string* v6);

// How many bytes CompactPeers would write for `peers`: IPv4 and IPv6.
std::pair<size_t, size_t> CompactSizes(const std::vector<PeerEndpoint>& peers);
// Writes `peers` compact, as CompactPeers, into buffers of CompactSizes.
void WriteCompactPeers(const std::vector<PeerEndpoint>& peers, uint8_t* v4, uint8_t* v6);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ANNOUNCE_POLICY_H_
