// HashRing: which agents own a chunk, by weighted rendezvous hashing.
//
// Every member scores every chunk: score = -weight / ln(u), where u in (0,1)
// is a hash of the member's ID and the chunk's ID. The highest R scores own
// the chunk. This gives the placement of independent uniform choices (the
// best balance a stateless scheme can have), weighted by cache size; a
// member joining or leaving moves only the chunks it gains or loses; and the
// owners depend only on the membership, never on the order it was listed.
//
// Thread-safety: immutable after construction; safe to share.
#ifndef SHOAL_HASH_RING_H_
#define SHOAL_HASH_RING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"

namespace shoal {

struct RingMember {
  std::string id;       // stable agent ID
  uint64_t weight = 1;  // relative capacity, e.g. cache bytes; 0 owns nothing
};

// A member joining (again, perhaps with a new weight) or leaving.
struct RingChange {
  std::string id;
  uint64_t weight = 0;  // when it joined
  bool left = false;
};

class HashRing {
 public:
  HashRing() = default;
  HashRing(std::vector<RingMember> members, uint64_t epoch);

  // The IDs of up to `replicas` owners of `chunk`, best first.
  std::vector<std::string> Owners(const ChunkId& chunk, int replicas = 1) const;
  // The same among the members `usable` accepts, asked best first until
  // `replicas` are found: the ring without the others, at the cost of a
  // few calls of `usable` rather than a ring built without them.
  std::vector<std::string> Owners(const ChunkId& chunk, int replicas,
                                  const std::function<bool(const std::string&)>& usable) const;
  // Index into members() of the first owner, or -1 for an empty ring.
  int OwnerIndex(const ChunkId& chunk) const;
  // True if `member` is among the `replicas` owners of `chunk`.
  bool IsOwner(const std::string& member, const ChunkId& chunk, int replicas = 1) const;

  // This ring after `changes` (AgentSession.ring with sinceEpoch, or the
  // directory's log), applied in order, as of `epoch`. Costs one pass over
  // the members and the changes' own sort: members kept are neither sorted
  // nor hashed again, so following a ring of thousands costs little per change.
  HashRing Apply(const std::vector<RingChange>& changes, uint64_t epoch) const;

  const std::vector<RingMember>& members() const { return members_; }
  uint64_t epoch() const { return epoch_; }
  size_t size() const { return members_.size(); }

 private:
  struct Scored {
    double score;
    size_t index;
  };
  std::vector<Scored> Score(const ChunkId& chunk) const;
  // REQUIRES: members sorted by id, seeds[i] the seed of members[i].
  HashRing(std::vector<RingMember> members, std::vector<uint64_t> seeds, uint64_t epoch)
      : members_(std::move(members)), seeds_(std::move(seeds)), epoch_(epoch) {}

  std::vector<RingMember> members_;  // sorted by id
  std::vector<uint64_t> seeds_;      // per member, from its id
  uint64_t epoch_ = 0;
};

}  // namespace shoal

#endif  // SHOAL_HASH_RING_H_
