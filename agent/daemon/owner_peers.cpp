#include "daemon/owner_peers.h"

namespace shoal {

std::optional<PeerAddress> PeerAddressOf(const std::string& member_id) {
  const size_t at = member_id.rfind('@');
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = member_id.substr(at + 1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon + 1 == rest.size() || rest.size() - colon - 1 > 5)
    return std::nullopt;
  uint32_t port = 0;
  for (size_t i = colon + 1; i < rest.size(); ++i) {
    if (rest[i] < '0' || rest[i] > '9') return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(rest[i] - '0');
  }
  std::string ip = rest.substr(0, colon);
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  if (ip.empty() || port == 0 || port > 65535) return std::nullopt;
  return PeerAddress{ip, static_cast<uint16_t>(port)};
}

std::vector<PeerAddress> OwnersAbove(const HashRing& ring, const std::string& self_id,
                                     const ChunkId& chunk, size_t limit) {
  std::vector<PeerAddress> out;
  if (limit == 0 || ring.size() == 0) return out;
  // Ranking every member costs one hash each: a replica order names a few
  // chunks, and rings hold thousands at most.
  for (const std::string& id : ring.Owners(chunk, static_cast<int>(ring.size()))) {
    if (id == self_id || out.size() == limit) break;
    if (auto address = PeerAddressOf(id)) out.push_back(*address);
  }
  return out;
}

std::vector<PeerAddress> OwnersBelow(const HashRing& ring, const std::string& self_id,
                                     const ChunkId& chunk, size_t limit) {
  std::vector<PeerAddress> out;
  if (limit == 0 || ring.size() == 0) return out;
  bool below = false;
  for (const std::string& id : ring.Owners(chunk, static_cast<int>(ring.size()))) {
    if (out.size() == limit) break;
    if (below) {
      if (auto address = PeerAddressOf(id)) out.push_back(*address);
    } else {
      below = id == self_id;
    }
  }
  return out;
}

}  // namespace shoal
