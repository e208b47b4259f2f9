#include "shoal/hash_ring.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "shoal/sha256.h"

namespace shoal {
namespace {

// A 64-bit mix (splitmix64's finaliser): chunk IDs are already uniform, so
// one mix of the member seed with the chunk's first word is enough, and cheap
// enough to score thousands of members per chunk.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t SeedOf(const std::string& id) {
  Digest d = Sha256::Of(id.data(), id.size());
  uint64_t v;
  std::memcpy(&v, d.data(), sizeof(v));
  return v;
}

}  // namespace

HashRing::HashRing(std::vector<RingMember> members, uint64_t epoch)
    : members_(std::move(members)), epoch_(epoch) {
  std::sort(members_.begin(), members_.end(),
            [](const RingMember& a, const RingMember& b) { return a.id < b.id; });
  seeds_.reserve(members_.size());
  for (const RingMember& m : members_) seeds_.push_back(SeedOf(m.id));
}

std::vector<RingMember> HashRing::WithChanges(const std::vector<RingChange>& changes) const {
  // The last change of each member decides: present with a weight, or gone.
  std::unordered_map<std::string, const RingChange*> last;
  for (const RingChange& c : changes) last[c.id] = &c;
  std::vector<RingMember> out;
  out.reserve(members_.size() + last.size());
  for (const RingMember& m : members_) {
    auto c = last.find(m.id);
    if (c == last.end()) {
      out.push_back(m);
    } else {
      if (!c->second->left) out.push_back({m.id, c->second->weight});
      last.erase(c);
    }
  }
  for (const auto& [id, c] : last) {
    if (!c->left) out.push_back({id, c->weight});
  }
  std::sort(out.begin(), out.end(),
            [](const RingMember& a, const RingMember& b) { return a.id < b.id; });
  return out;
}

std::vector<HashRing::Scored> HashRing::Score(const ChunkId& chunk) const {
  uint64_t c0, c1;
  std::memcpy(&c0, chunk.data(), 8);
  std::memcpy(&c1, chunk.data() + 8, 8);
  std::vector<Scored> out;
  out.reserve(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].weight == 0) continue;
    uint64_t h = Mix(seeds_[i] ^ c0) ^ Mix(seeds_[i] + c1);
    // u in (0, 1), never exactly 0 or 1.
    double u = (static_cast<double>(h >> 11) + 0.5) / 9007199254740992.0;
    out.push_back({-static_cast<double>(members_[i].weight) / std::log(u), i});
  }
  return out;
}

int HashRing::OwnerIndex(const ChunkId& chunk) const {
  std::vector<Scored> s = Score(chunk);
  if (s.empty()) return -1;
  auto best = std::max_element(s.begin(), s.end(), [](const Scored& a, const Scored& b) {
    return a.score < b.score || (a.score == b.score && a.index > b.index);
  });
  return static_cast<int>(best->index);
}

std::vector<std::string> HashRing::Owners(const ChunkId& chunk, int replicas) const {
  std::vector<Scored> s = Score(chunk);
  size_t n = std::min<size_t>(s.size(), static_cast<size_t>(std::max(0, replicas)));
  std::partial_sort(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n), s.end(),
                    [](const Scored& a, const Scored& b) {
                      return a.score > b.score || (a.score == b.score && a.index < b.index);
                    });
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(members_[s[i].index].id);
  return out;
}

bool HashRing::IsOwner(const std::string& member, const ChunkId& chunk, int replicas) const {
  for (const std::string& o : Owners(chunk, replicas)) {
    if (o == member) return true;
  }
  return false;
}

}  // namespace shoal
