#include "swarm/announce_policy.h"

#include <arpa/inet.h>

#include <cstring>

#include "swarm/torrent_index.h"

namespace shoal::tracker {

bool MayAnnounce(TorrentIndex& torrents, const TokenClaims& claims, const InfoHash20& h,
                 int64_t now_ms) {
  return torrents.AnyNamespace(
      h, [&](const std::string& ns) { return claims.Check(ns, Role::kRead, now_ms).ok(); });
}

std::pair<size_t, size_t> CompactSizes(const std::vector<PeerEndpoint>& peers) {
  size_t v4 = 0, v6 = 0;
  for (const PeerEndpoint& p : peers) {
    if (p.ip.size == 4) v4 += 6;
    if (p.ip.size == 16) v6 += 18;
  }
  return {v4, v6};
}

void WriteCompactPeers(const std::vector<PeerEndpoint>& peers, uint8_t* v4, uint8_t* v6) {
  for (const PeerEndpoint& p : peers) {
    if (p.ip.size != 4 && p.ip.size != 16) continue;
    uint8_t*& out = p.ip.size == 4 ? v4 : v6;
    std::memcpy(out, p.ip.bytes.data(), p.ip.size);
    out[p.ip.size] = static_cast<uint8_t>(p.port >> 8);
    out[p.ip.size + 1] = static_cast<uint8_t>(p.port & 0xff);
    out += p.ip.size + 2;
  }
}

void CompactPeers(const std::vector<PeerEndpoint>& peers, std::string* v4, std::string* v6) {
  const auto [n4, n6] = CompactSizes(peers);
  const size_t at4 = v4->size(), at6 = v6->size();
  v4->resize(at4 + n4);
  v6->resize(at6 + n6);
  WriteCompactPeers(peers, reinterpret_cast<uint8_t*>(&(*v4)[0]) + at4,
                    reinterpret_cast<uint8_t*>(&(*v6)[0]) + at6);
}

}  // namespace shoal::tracker
