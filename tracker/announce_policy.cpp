#include "announce_policy.h"

#include <arpa/inet.h>

#include "torrent_index.h"

namespace shoal::tracker {

bool MayAnnounce(TorrentIndex& torrents, const TokenClaims& claims, const InfoHash20& h,
                 int64_t now_ms) {
  for (const std::string& ns : torrents.Namespaces(h)) {
    if (claims.Check(ns, Role::kRead, now_ms).ok()) return true;
  }
  return false;
}

void CompactPeers(const std::vector<PeerEndpoint>& peers, std::string* v4, std::string* v6) {
  for (const PeerEndpoint& p : peers) {
    uint8_t addr[16];
    uint16_t port_be = htons(p.port);
    if (inet_pton(AF_INET, p.ip.c_str(), addr) == 1) {
      v4->append(reinterpret_cast<char*>(addr), 4).append(reinterpret_cast<char*>(&port_be), 2);
    } else if (inet_pton(AF_INET6, p.ip.c_str(), addr) == 1) {
      v6->append(reinterpret_cast<char*>(addr), 16).append(reinterpret_cast<char*>(&port_be), 2);
    }
  }
}

}  // namespace shoal::tracker
