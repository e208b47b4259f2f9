// Where a replica order connects (the owners ranked above this agent) and
// whom an owner hands a fresh chunk on to (those just below it): peer
// addresses read from the ring's member IDs.
#include "daemon/owner_peers.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "shoal/sha256.h"

using namespace shoal;

namespace {

// Eight agents, agent-i at 10.0.0.i, peer port 6880 + i.
HashRing EightAgents() {
  std::vector<RingMember> members;
  for (int i = 1; i <= 8; ++i) {
    members.push_back({"agent-" + std::to_string(i) + "@10.0.0." + std::to_string(i) + ":" +
                           std::to_string(6880 + i),
                       1});
  }
  return HashRing(members, 1);
}

std::string Spelled(const PeerAddress& a) { return a.ip + ":" + std::to_string(a.port); }

std::string AddressIn(const std::string& member_id) {
  return member_id.substr(member_id.find('@') + 1);
}

}  // namespace

TEST_CASE("a ring member's ID names its peer address", "[owners]") {
  auto v4 = PeerAddressOf("node-3@10.77.1.4:6881");
  REQUIRE(v4.has_value());
  CHECK(v4->ip == "10.77.1.4");
  CHECK(v4->port == 6881);
  auto v6 = PeerAddressOf("node@fd00::5:7000");  // the tracker writes IPv6 without brackets
  REQUIRE(v6.has_value());
  CHECK(v6->ip == "fd00::5");
  CHECK(v6->port == 7000);
  auto bracketed = PeerAddressOf("node@[::1]:7000");
  REQUIRE(bracketed.has_value());
  CHECK(bracketed->ip == "::1");
  auto at_in_name = PeerAddressOf("a@b@127.0.0.1:9");
  REQUIRE(at_in_name.has_value());
  CHECK(Spelled(*at_in_name) == "127.0.0.1:9");

  for (const char* bad :
       {"node-3", "node@10.0.0.1", "node@10.0.0.1:", "node@:6881", "node@10.0.0.1:0",
        "node@10.0.0.1:65536", "node@10.0.0.1:68x1", "node@10.0.0.1:1234567",
        "node@10.0.0.1:6882-6881", "node@10.0.0.1:6881-", "node@10.0.0.1:-6881",
        "node@10.0.0.1:6881-65536", "node@10.0.0.1:6881-7000"}) {
    INFO(bad);
    CHECK_FALSE(PeerAddressOf(bad).has_value());
  }
}

TEST_CASE("an agent with several peer sessions names their ports, and each torrent's is known",
          "[owners]") {
  auto one = PeerAddressOf("node@10.0.0.1:6881");
  REQUIRE(one.has_value());
  CHECK(one->sessions == 1);
  auto four = PeerAddressOf("node@fd00::5:6881-6884");
  REQUIRE(four.has_value());
  CHECK(four->ip == "fd00::5");
  CHECK(four->port == 6881);
  CHECK(four->sessions == 4);
  // Each torrent is on the first port plus its session, on every agent.
  int seen[4] = {0, 0, 0, 0};
  for (int i = 0; i < 64; ++i) {
    const std::string name = "torrent " + std::to_string(i);
    const FileTorrentId id = FileTorrentId::FromBytes(Sha256::Of(name.data(), name.size()).data());
    const uint16_t port = four->PortFor(id);
    REQUIRE(port >= 6881);
    REQUIRE(port <= 6884);
    CHECK(port == 6881 + SessionOf(id, 4));
    CHECK(one->PortFor(id) == 6881);
    ++seen[port - 6881];
  }
  for (int k = 0; k < 4; ++k) CHECK(seen[k] > 0);  // 64 torrents reach every session
}

TEST_CASE("a replica owner connects to the owners ranked above it, best first", "[owners]") {
  const HashRing ring = EightAgents();
  for (int c = 0; c < 50; ++c) {
    const ChunkId chunk = ChunkId::From(Sha256::Of(&c, sizeof c));
    const std::vector<std::string> ranked = ring.Owners(chunk, 8);
    // The second owner connects to the first, the third to both above it.
    auto second = OwnersAbove(ring, ranked[1], chunk, 3);
    REQUIRE(second.size() == 1);
    CHECK(Spelled(second[0]) == AddressIn(ranked[0]));
    auto third = OwnersAbove(ring, ranked[2], chunk, 3);
    REQUIRE(third.size() == 2);
    CHECK(Spelled(third[0]) == AddressIn(ranked[0]));
    CHECK(Spelled(third[1]) == AddressIn(ranked[1]));
    // Far down the ranking, only the first few: they hold the chunk.
    CHECK(OwnersAbove(ring, ranked[6], chunk, 3).size() == 3);
    // The first owner has no one to ask.
    CHECK(OwnersAbove(ring, ranked[0], chunk, 3).empty());
  }
}

TEST_CASE("an owner holds a fresh chunk for the owners ranked just below it", "[owners]") {
  const HashRing ring = EightAgents();
  for (int c = 0; c < 50; ++c) {
    const ChunkId chunk = ChunkId::From(Sha256::Of(&c, sizeof c));
    const std::vector<std::string> ranked = ring.Owners(chunk, 8);
    auto below = OwnersBelow(ring, ranked[0], chunk, 2);
    REQUIRE(below.size() == 2);
    CHECK(Spelled(below[0]) == AddressIn(ranked[1]));
    CHECK(Spelled(below[1]) == AddressIn(ranked[2]));
    // A takeover by the third owner hands on to the two below it.
    auto after_third = OwnersBelow(ring, ranked[2], chunk, 2);
    REQUIRE(after_third.size() == 2);
    CHECK(Spelled(after_third[0]) == AddressIn(ranked[3]));
    CHECK(OwnersBelow(ring, ranked[7], chunk, 2).empty());  // the last has no one below
  }
  const ChunkId chunk = ChunkId::From(Sha256::Of("chunk", 5));
  CHECK(OwnersBelow(ring, "newcomer@10.0.0.99:6881", chunk, 2).empty());
}

TEST_CASE("an agent not yet on the ring it saw connects to the chunk's first owners", "[owners]") {
  const HashRing ring = EightAgents();
  const ChunkId chunk = ChunkId::From(Sha256::Of("chunk", 5));
  const std::vector<std::string> ranked = ring.Owners(chunk, 2);
  auto owners = OwnersAbove(ring, "newcomer@10.0.0.99:6881", chunk, 2);
  REQUIRE(owners.size() == 2);
  CHECK(Spelled(owners[0]) == AddressIn(ranked[0]));
  CHECK(Spelled(owners[1]) == AddressIn(ranked[1]));
  CHECK(OwnersAbove(HashRing(), "a@10.0.0.1:1", chunk, 3).empty());
  CHECK(OwnersAbove(ring, "newcomer@10.0.0.99:6881", chunk, 0).empty());
}
