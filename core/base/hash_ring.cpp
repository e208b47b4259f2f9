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

HashRing HashRing::Apply(const std::vector<RingChange>& changes, uint64_t epoch) const {
  // The last change of each member decides: present with a weight, or gone.
  std::vector<const RingChange*> last;
  last.reserve(changes.size());
  for (const RingChange& c : changes) last.push_back(&c);
  std::stable_sort(last.begin(), last.end(),
                   [](const RingChange* a, const RingChange* b) { return a->id < b->id; });
  std::vector<RingMember> members;
  std::vector<uint64_t> seeds;
  members.reserve(members_.size() + last.size());
  seeds.reserve(members_.size() + last.size());
  size_t i = 0, j = 0;
  while (i < members_.size() || j < last.size()) {
    if (j == last.size() || (i < members_.size() && members_[i].id < last[j]->id)) {
      members.push_back(members_[i]);
      seeds.push_back(seeds_[i++]);
      continue;
    }
    const std::string& id = last[j]->id;
    while (j + 1 < last.size() && last[j + 1]->id == id) ++j;  // its last change
    const RingChange& c = *last[j++];
    const bool known = i < members_.size() && members_[i].id == id;
    if (!c.left) {
      members.push_back({id, c.weight});
      seeds.push_back(known ? seeds_[i] : SeedOf(id));
    }
    if (known) ++i;
  }
  return HashRing(std::move(members), std::move(seeds), epoch);
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
  return Owners(chunk, replicas, [](const std::string&) { return true; });
}

std::vector<std::string> HashRing::Owners(
    const ChunkId& chunk, int replicas,
    const std::function<bool(const std::string&)>& usable) const {
  std::vector<Scored> s = Score(chunk);
  // A heap of every score, best on top, popped until enough are usable:
  // one pass over the members, then log(members) per owner looked at.
  auto worse = [](const Scored& a, const Scored& b) {
    return a.score < b.score || (a.score == b.score && a.index > b.index);
  };
  std::make_heap(s.begin(), s.end(), worse);
  std::vector<std::string> out;
  for (auto end = s.end();
       end != s.begin() && out.size() < static_cast<size_t>(std::max(0, replicas)); --end) {
    std::pop_heap(s.begin(), end, worse);
    const std::string& id = members_[(end - 1)->index].id;
    if (usable(id)) out.push_back(id);
  }
  return out;
}

bool HashRing::IsOwner(const std::string& member, const ChunkId& chunk, int replicas) const {
  for (const std::string& o : Owners(chunk, replicas)) {
    if (o == member) return true;
  }
  return false;
}

}  // namespace shoal
