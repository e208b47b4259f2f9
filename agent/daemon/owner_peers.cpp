#include "daemon/owner_peers.h"

namespace shoal {

std::optional<PeerAddress> PeerAddressOf(const std::string& member_id) {
  const size_t at = member_id.rfind('@');
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = member_id.substr(at + 1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  // "port" or "first-last"
  auto number = [](const std::string& s) -> uint32_t {
    if (s.empty() || s.size() > 5) return 0;
    uint32_t n = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return 0;
      n = n * 10 + static_cast<uint32_t>(c - '0');
    }
    return n;
  };
  const std::string ports = rest.substr(colon + 1);
  const size_t dash = ports.find('-');
  const uint32_t first = number(ports.substr(0, dash));
  const uint32_t last = dash == std::string::npos ? first : number(ports.substr(dash + 1));
  std::string ip = rest.substr(0, colon);
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  if (ip.empty() || first == 0 || last > 65535 || last < first || last - first >= 64)
    return std::nullopt;
  return PeerAddress{ip, static_cast<uint16_t>(first), static_cast<uint16_t>(last - first + 1)};
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
