#include "daemon/tracker_rank.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>

#include "shoal/sha256.h"

namespace shoal {

std::vector<size_t> RankTrackers(const std::string& node,
                                 const std::vector<std::string>& addresses) {
  std::vector<std::pair<uint64_t, size_t>> scored;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const std::string key = node + "\n" + addresses[i];
    Digest d = Sha256::Of(key.data(), key.size());
    uint64_t score;
    std::memcpy(&score, d.data(), sizeof score);
    scored.push_back({score, i});
  }
  std::sort(scored.begin(), scored.end(), std::greater<>());
  std::vector<size_t> out;
  for (const auto& s : scored) out.push_back(s.second);
  return out;
}

}  // namespace shoal
