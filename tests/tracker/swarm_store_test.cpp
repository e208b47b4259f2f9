#include <catch2/catch.hpp>

#include "swarm_store.h"

using namespace shoal::tracker;

namespace {
AnnounceRequest Req(const std::string& id, uint16_t port, bool seed, const std::string& zone = "") {
  AnnounceRequest r;
  r.info_hash.fill(7);
  r.peer_id = id + std::string(20 - id.size(), '-');
  r.self = {"10.0.0.1", port, seed, zone};
  return r;
}
}  // namespace

TEST_CASE("a leecher gets seeders first, its own zone first, and never itself", "[swarm]") {
  SwarmStore s(15000);
  s.Announce(Req("leech-far", 1, false, "b"), 1000);
  s.Announce(Req("seed-far", 2, true, "b"), 1001);
  s.Announce(Req("leech-near", 3, false, "a"), 1002);
  s.Announce(Req("seed-near", 4, true, "a"), 1003);
  AnnounceReply r = s.Announce(Req("me", 5, false, "a"), 1004);
  REQUIRE(r.peers.size() == 4);
  CHECK(r.peers[0].port == 4);  // seed, same zone
  CHECK(r.peers[1].port == 2);  // seed, other zone
  CHECK(r.peers[2].port == 3);  // leecher, same zone
  CHECK(r.peers[3].port == 1);
  CHECK(r.complete == 2);
  CHECK(r.incomplete == 3);
}

TEST_CASE("numwant caps the reply, and a seeder is not sent other seeders", "[swarm]") {
  SwarmStore s(15000);
  for (uint16_t p = 1; p <= 10; ++p) s.Announce(Req("peer" + std::to_string(p), p, p <= 5), 1000 + p);
  AnnounceRequest asker = Req("me", 99, false);
  asker.numwant = 3;
  CHECK(s.Announce(asker, 2000).peers.size() == 3);
  AnnounceReply seed = s.Announce(Req("seed-me", 98, true), 2001);
  for (const PeerEndpoint& p : seed.peers) CHECK_FALSE(p.seed);
  CHECK(seed.peers.size() == 6);  // five leechers and the leecher "me"
}

TEST_CASE("stopped and silent peers leave the swarm", "[swarm]") {
  SwarmStore s(15000);
  s.Announce(Req("a", 1, true), 1000);
  s.Announce(Req("b", 2, true), 1000);
  AnnounceRequest stop = Req("a", 1, true);
  stop.event = AnnounceRequest::Event::kStopped;
  s.Announce(stop, 2000);
  CHECK(s.Announce(Req("me", 3, false), 2001).peers.size() == 1);
  CHECK(s.Announce(Req("me", 3, false), 20000).peers.empty());  // b went silent
  CHECK(s.Stats().peers == 1);
}
