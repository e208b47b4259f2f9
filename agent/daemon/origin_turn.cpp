#include "daemon/origin_turn.h"

#include <vector>

namespace shoal {

OriginTurn TurnFor(const HashRing* ring, const std::string& self_id, const ChunkId& chunk) {
  if (ring == nullptr || ring->size() == 0 || self_id.empty()) return {OriginRole::kNoRing, 0};
  std::vector<std::string> ranked = ring->Owners(chunk, static_cast<int>(ring->size()));
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i] == self_id) return {i == 0 ? OriginRole::kOwner : OriginRole::kOther, i};
  }
  return {OriginRole::kOther, ranked.size()};  // not in this ring yet: last
}

}  // namespace shoal
