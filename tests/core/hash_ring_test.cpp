// The ring of chunk owners: balance against ideal random placement in the
// same test, movement on join and leave, weights, and determinism. The
// figures are printed for docs/benchmarks.md.
#include "shoal/hash_ring.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>
#include <set>

using namespace shoal;

namespace {

std::vector<ChunkId> RandomChunks(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ChunkId> out(n);
  for (ChunkId& c : out) {
    for (size_t i = 0; i < ChunkId::kSize; i += 8) {
      uint64_t v = rng();
      std::memcpy(c.mutable_data() + i, &v, 8);
    }
  }
  return out;
}

std::vector<RingMember> Members(size_t n, uint64_t weight = 1) {
  std::vector<RingMember> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back({"agent-" + std::to_string(i) + "@10.0.0.1:6881", weight});
  return out;
}

double MaxOverMean(const std::vector<uint64_t>& load) {
  uint64_t total = 0, max = 0;
  for (uint64_t l : load) {
    total += l;
    max = std::max(max, l);
  }
  return static_cast<double>(max) / (static_cast<double>(total) / static_cast<double>(load.size()));
}

}  // namespace

TEST_CASE("ring balance matches ideal random placement with 1,000 agents and 100k chunks",
          "[ring]") {
  const size_t kAgents = 1000, kChunks = 100000;
  HashRing ring(Members(kAgents), 1);
  std::vector<ChunkId> chunks = RandomChunks(kChunks, 42);
  std::vector<uint64_t> ours(kAgents, 0);
  for (const ChunkId& c : chunks) ours[static_cast<size_t>(ring.OwnerIndex(c))]++;
  // Ideal: each chunk to an independent uniformly random agent, several
  // trials, averaged, in the same test.
  double ideal = 0;
  const int kTrials = 5;
  for (int t = 0; t < kTrials; ++t) {
    std::mt19937_64 rng(1000 + static_cast<uint64_t>(t));
    std::vector<uint64_t> load(kAgents, 0);
    for (size_t i = 0; i < kChunks; ++i) load[rng() % kAgents]++;
    ideal += MaxOverMean(load) / kTrials;
  }
  double got = MaxOverMean(ours);
  std::printf("ring balance: max/mean %.3f, ideal random placement %.3f, ratio %.3f\n", got, ideal,
              got / ideal);
  CHECK(got <= 1.05 * ideal);
}

TEST_CASE("about 1/N of chunks move when one agent joins or leaves", "[ring]") {
  const size_t kAgents = 100, kChunks = 100000;
  std::vector<RingMember> members = Members(kAgents);
  HashRing before(members, 1);
  std::vector<ChunkId> chunks = RandomChunks(kChunks, 7);

  std::vector<RingMember> fewer(members.begin() + 1, members.end());  // agent-0 leaves
  HashRing after_leave(fewer, 2);
  std::vector<RingMember> more = members;
  more.push_back({"agent-new@10.0.0.9:6881", 1});
  HashRing after_join(more, 3);

  size_t moved_leave = 0, owned_by_leaver = 0, moved_join = 0, gained_by_joiner = 0;
  for (const ChunkId& c : chunks) {
    std::string owner = before.Owners(c)[0];
    if (owner == members[0].id) ++owned_by_leaver;
    if (after_leave.Owners(c)[0] != owner) ++moved_leave;
    std::string joined = after_join.Owners(c)[0];
    if (joined != owner) ++moved_join;
    if (joined == "agent-new@10.0.0.9:6881") ++gained_by_joiner;
  }
  double leave = static_cast<double>(moved_leave) / kChunks,
         join = static_cast<double>(moved_join) / kChunks;
  std::printf("ring movement with %zu agents: leave %.4f, join %.4f of chunks (1/N = %.4f)\n",
              kAgents, leave, join, 1.0 / kAgents);
  CHECK(moved_leave == owned_by_leaver);  // only the leaver's chunks move
  CHECK(moved_join == gained_by_joiner);  // only chunks the newcomer takes move
  CHECK(leave == Approx(1.0 / kAgents).epsilon(0.2));
  CHECK(join == Approx(1.0 / (kAgents + 1)).epsilon(0.2));
}

TEST_CASE("ring ownership follows weights", "[ring]") {
  std::vector<RingMember> members = {{"big", 3}, {"small", 1}, {"off", 0}};
  HashRing ring(members, 1);
  size_t big = 0, small = 0, off = 0;
  for (const ChunkId& c : RandomChunks(40000, 9)) {
    std::string o = ring.Owners(c)[0];
    (o == "big" ? big : o == "small" ? small : off)++;
  }
  CHECK(off == 0);
  CHECK(static_cast<double>(big) / static_cast<double>(small) == Approx(3.0).epsilon(0.05));
}

TEST_CASE("ring owners depend only on the membership", "[ring]") {
  std::vector<RingMember> a = Members(50);
  std::vector<RingMember> b = a;
  std::reverse(b.begin(), b.end());
  HashRing ra(a, 1), rb(b, 7);
  for (const ChunkId& c : RandomChunks(2000, 11)) {
    CHECK(ra.Owners(c, 3) == rb.Owners(c, 3));
  }
  auto owners = ra.Owners(RandomChunks(1, 5)[0], 3);
  CHECK(owners.size() == 3);
  CHECK(owners[0] != owners[1]);
  CHECK(HashRing().Owners(RandomChunks(1, 5)[0]).empty());
}

TEST_CASE("a ring with changes applied equals the ring built from scratch", "[ring]") {
  HashRing before(Members(20), 1);
  std::vector<RingMember> after = Members(20);
  const std::string gone = after[3].id;
  after.erase(after.begin() + 3);   // left
  after[5].weight = 7;              // joined again with a new weight
  after.push_back({"zz-new", 2});   // joined
  after.push_back({"zz-back", 4});  // left, then joined again
  std::vector<RingChange> changes = {
      {gone, 0, true},    {after[5].id, 7, false}, {"zz-new", 2, false}, {"flash", 1, false},
      {"flash", 0, true}, {"zz-back", 3, false},   {"zz-back", 0, true}, {"zz-back", 4, false}};
  HashRing delta = before.Apply(changes, 2), scratch(after, 2);
  CHECK(delta.epoch() == 2);
  REQUIRE(delta.members().size() == scratch.members().size());
  for (size_t i = 0; i < delta.members().size(); ++i) {
    CHECK(delta.members()[i].id == scratch.members()[i].id);
    CHECK(delta.members()[i].weight == scratch.members()[i].weight);
  }
  for (const ChunkId& c : RandomChunks(500, 13)) CHECK(delta.Owners(c, 2) == scratch.Owners(c, 2));
}

TEST_CASE("owners among the usable members are the ring's without the others", "[ring]") {
  std::vector<RingMember> all = Members(40);
  std::set<std::string> down;
  std::vector<RingMember> up;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i % 3 == 0) {
      down.insert(all[i].id);
    } else {
      up.push_back(all[i]);
    }
  }
  HashRing ring(all, 1), without(up, 1);
  auto usable = [&](const std::string& id) { return down.count(id) == 0; };
  for (const ChunkId& c : RandomChunks(300, 17)) {
    CHECK(ring.Owners(c, 3, usable) == without.Owners(c, 3));
    CHECK(ring.Owners(c, 2) == ring.Owners(c, 2, [](const std::string&) { return true; }));
  }
  CHECK(ring.Owners(RandomChunks(1, 3)[0], 3, [](const std::string&) { return false; }).empty());
}
