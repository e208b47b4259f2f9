#include "announce_policy.h"

#include <arpa/inet.h>

#include "torrent_index.h"

namespace shoal::tracker {

bool MayAnnounce(TorrentIndex& torrents, const TokenClaims& claims, const InfoHash20& h,
                 int64_t now_ms) {
  return torrents.AnyNamespace(
      h, [&](const std::string& ns) { return claims.Check(ns, Role::kRead, now_ms).ok(); });
}

void CompactPeers(const std::vector<PeerEndpoint>& peers, std::string* v4, std::string* v6) {
  size_t n4 = 0;
  for (const PeerEndpoint& p : peers) n4 += p.ip.size == 4 ? 1 : 0;
  v4->reserve(v4->size() + 6 * n4);
  v6->reserve(v6->size() + 18 * (peers.size() - n4));
  for (const PeerEndpoint& p : peers) {
    if (p.ip.size != 4 && p.ip.size != 16) continue;
    const char port_be[2] = {static_cast<char>(p.port >> 8), static_cast<char>(p.port & 0xff)};
    std::string* out = p.ip.size == 4 ? v4 : v6;
    out->append(reinterpret_cast<const char*>(p.ip.bytes.data()), p.ip.size).append(port_be, 2);
  }
}

}  // namespace shoal::tracker
