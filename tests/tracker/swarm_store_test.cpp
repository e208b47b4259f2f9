#include "swarm/swarm_store.h"

#include <catch2/catch.hpp>
#include <set>

#include "swarm/announce_policy.h"

using namespace shoal::tracker;

namespace {
PeerAddress Ip(const std::string& text) { return *PeerAddress::Parse(text); }

AnnounceRequest Req(const std::string& id, uint16_t port, bool seed, const std::string& zone = "") {
  AnnounceRequest r;
  r.info_hash.fill(7);
  r.peer_id = id + std::string(20 - id.size(), '-');
  r.self = {Ip("10.0.0.1"), port, seed, zone};
  return r;
}

AnnounceRequest ReqFor(uint8_t torrent, const std::string& id) {
  AnnounceRequest r = Req(id, 1, false);
  r.info_hash.fill(torrent);
  return r;
}

const SwarmLimits kRoomy;
}  // namespace

TEST_CASE("a leecher gets seeders first, its own zone first, and never itself", "[swarm]") {
  SwarmStore s(15000, 15000, kRoomy);
  (void)s.Announce(Req("leech-far", 1, false, "b"), 1000);
  (void)s.Announce(Req("seed-far", 2, true, "b"), 1001);
  (void)s.Announce(Req("leech-near", 3, false, "a"), 1002);
  (void)s.Announce(Req("seed-near", 4, true, "a"), 1003);
  auto r = s.Announce(Req("me", 5, false, "a"), 1004);
  REQUIRE(r.ok());
  REQUIRE(r->peers.size() == 4);
  CHECK(r->peers[0].port == 4);  // seed, same zone
  CHECK(r->peers[1].port == 2);  // seed, other zone
  CHECK(r->peers[2].port == 3);  // leecher, same zone
  CHECK(r->peers[3].port == 1);
  CHECK(r->complete == 2);
  CHECK(r->incomplete == 3);
}

TEST_CASE("numwant caps the reply, and a seeder is not sent other seeders", "[swarm]") {
  SwarmStore s(15000, 15000, kRoomy);
  for (uint16_t p = 1; p <= 10; ++p)
    (void)s.Announce(Req("peer" + std::to_string(p), p, p <= 5), 1000 + p);
  AnnounceRequest asker = Req("me", 99, false);
  asker.numwant = 3;
  CHECK(s.Announce(asker, 2000)->peers.size() == 3);
  auto seed = s.Announce(Req("seed-me", 98, true), 2001);
  for (const PeerEndpoint& p : seed->peers) CHECK_FALSE(p.seed);
  CHECK(seed->peers.size() == 6);  // five leechers and the leecher "me"
}

TEST_CASE("stopped and silent peers leave the swarm", "[swarm]") {
  SwarmStore s(15000, 15000, kRoomy);
  (void)s.Announce(Req("a", 1, true), 1000);
  (void)s.Announce(Req("b", 2, true), 1000);
  AnnounceRequest stop = Req("a", 1, true);
  stop.event = AnnounceRequest::Event::kStopped;
  (void)s.Announce(stop, 2000);
  CHECK(s.Announce(Req("me", 3, false), 2001)->peers.size() == 1);
  CHECK(s.Announce(Req("me", 3, false), 20000)->peers.empty());  // b went silent
  CHECK(s.Stats(20000).peers == 1);
}

TEST_CASE("a sweep drops silent peers of every swarm, and their empty swarms", "[swarm]") {
  SwarmStore s(15000, 15000, kRoomy);
  for (uint8_t t = 1; t <= 50; ++t) (void)s.Announce(ReqFor(t, "once"), 1000);
  (void)s.Announce(ReqFor(51, "live"), 10000);
  CHECK(s.Stats(10000).swarms == 51);
  CHECK(s.Sweep(16001) == 50);
  SwarmStats after = s.Stats(16001);
  CHECK(after.swarms == 1);
  CHECK(after.peers == 1);
  // Stats alone counts only the live, without a sweep first.
  SwarmStore t(15000, 15000, kRoomy);
  (void)t.Announce(ReqFor(1, "once"), 1000);
  CHECK(t.Stats(1000).swarms == 1);
  CHECK(t.Stats(16001).swarms == 0);
}

TEST_CASE("the swarm and peer limits refuse newcomers but not peers already known", "[swarm]") {
  SwarmStore s(15000, 15000, SwarmLimits{2, 3});
  REQUIRE(s.Announce(ReqFor(1, "a"), 1000).ok());
  REQUIRE(s.Announce(ReqFor(2, "b"), 1000).ok());
  auto third_swarm = s.Announce(ReqFor(3, "c"), 1000);
  REQUIRE_FALSE(third_swarm.ok());
  CHECK_THAT(third_swarm.status().message(), Catch::Contains("limit of 2 swarms"));
  REQUIRE(s.Announce(ReqFor(1, "c"), 1000).ok());  // an existing swarm, third peer
  auto fourth_peer = s.Announce(ReqFor(2, "d"), 1000);
  REQUIRE_FALSE(fourth_peer.ok());
  CHECK_THAT(fourth_peer.status().message(), Catch::Contains("limit of 3 peers"));
  CHECK(s.Announce(ReqFor(2, "b"), 1500).ok());  // known peers re-announce
  CHECK(s.Stats(1500).peers == 3);
  // Once the early peers expire there is room again.
  CHECK(s.Announce(ReqFor(3, "c"), 16200).ok());
  CHECK(s.Stats(16200).swarms == 2);  // torrent 2's "b" (seen at 1500) and torrent 3
}

TEST_CASE("a seeder stays listed for its own, longer interval, and then leaves", "[swarm]") {
  SwarmStore s(15000, 180000, kRoomy);  // leechers 3 x 5 s; seeders 3 x 60 s
  (void)s.Announce(Req("seed", 1, true), 0);
  (void)s.Announce(Req("leech", 2, false), 0);
  auto later = s.Announce(Req("me", 3, false), 100000);  // past the leecher's TTL
  REQUIRE(later.ok());
  REQUIRE(later->peers.size() == 1);
  CHECK(later->peers[0].port == 1);
  CHECK(s.Stats(100000).peers == 2);  // the seeder and "me"
  CHECK(s.Stats(250000).peers == 0);
}

namespace {
AnnounceRequest Held(uint8_t torrent, uint64_t holder, const std::string& agent) {
  AnnounceRequest r = ReqFor(torrent, "session");
  r.peer_id = "session:" + std::to_string(holder);
  r.holder = holder;
  r.holder_agent = agent;
  return r;
}
}  // namespace

TEST_CASE("a session's peers outlive the TTL and leave together when it ends", "[swarm]") {
  SwarmStore s(1000, 1000, kRoomy);
  for (uint8_t t = 1; t <= 3; ++t) REQUIRE(s.Announce(Held(t, 7, "agent-a"), 0).ok());
  REQUIRE(s.Announce(Held(1, 8, "agent-b"), 0).ok());
  REQUIRE(s.Announce(ReqFor(1, "http-peer"), 0).ok());
  s.Sweep(100000);  // far past the TTL: only the HTTP peer expires
  SwarmStats st = s.Stats(100000);
  CHECK(st.peers == 4);
  CHECK(st.held == 4);
  CHECK(s.Release(7) == 3);
  st = s.Stats(100000);
  CHECK(st.swarms == 1);
  CHECK(st.peers == 1);
  CHECK(st.held == 1);
  CHECK(s.Release(7) == 0);
  CHECK(s.ReleaseUnless([](const std::string& agent) { return agent != "agent-b"; }) == 1);
  CHECK(s.Stats(100000).swarms == 0);
}

TEST_CASE("releasing the agents the directory dropped frees their sessions, not the others'",
          "[swarm]") {
  SwarmStore s(1000, 1000, kRoomy);
  for (uint8_t t = 1; t <= 3; ++t) REQUIRE(s.Announce(Held(t, 7, "agent-a"), 0).ok());
  REQUIRE(s.Announce(Held(1, 9, "agent-a"), 0).ok());  // a second session of the same agent
  REQUIRE(s.Announce(Held(1, 8, "agent-b"), 0).ok());
  REQUIRE(s.Announce(Held(2, 10, "agent-c"), 0).ok());
  auto none_live = [](const std::string&) { return false; };
  // agent-c is back (live again) by the time the sweep looks: it keeps its peers.
  CHECK(s.ReleaseAgents({"agent-a", "agent-c", "never-held"},
                        [](const std::string& agent) { return agent == "agent-c"; }) == 4);
  SwarmStats st = s.Stats(0);
  CHECK(st.held == 2);
  CHECK(s.Release(7) == 0);  // already gone
  CHECK(s.Release(9) == 0);
  CHECK(s.ReleaseAgents({"agent-a"}, none_live) == 0);
  // A session whose agent left stops being found under it once released.
  CHECK(s.Release(8) == 1);
  CHECK(s.ReleaseAgents({"agent-b"}, none_live) == 0);
  CHECK(s.ReleaseAgents({"agent-c"}, none_live) == 1);
  CHECK(s.Stats(0).peers == 0);
}

TEST_CASE("a session stopping one swarm keeps the others", "[swarm]") {
  SwarmStore s(1000, 1000, kRoomy);
  REQUIRE(s.Announce(Held(1, 7, "a"), 0).ok());
  REQUIRE(s.Announce(Held(2, 7, "a"), 0).ok());
  AnnounceRequest stop = Held(1, 7, "a");
  stop.event = AnnounceRequest::Event::kStopped;
  REQUIRE(s.Announce(stop, 0).ok());
  CHECK(s.Stats(0).held == 1);
  CHECK(s.Release(7) == 1);
  CHECK(s.Stats(0).peers == 0);
}

TEST_CASE("in a swarm of 20,000 held peers, a reply finds the one seeder and spreads the rest",
          "[swarm]") {
  SwarmStore s(15000, 15000, SwarmLimits{10, 100000});
  for (uint32_t i = 0; i < 20000; ++i) {
    AnnounceRequest r =
        Req("l" + std::to_string(i), static_cast<uint16_t>(1000 + i % 60000), false);
    r.self.ip = Ip("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250));
    r.holder = i + 1;
    r.numwant = 0;  // records only, as an agent's batch does for a seeder
    auto got = s.Announce(r, 1000);
    REQUIRE(got.ok());
    CHECK(got->peers.empty());
  }
  AnnounceRequest seed = Req("the-seed", 7, true);
  seed.self.ip = Ip("10.9.9.9");
  seed.holder = 99999;
  REQUIRE(s.Announce(seed, 1001).ok());

  // A leecher gets the one seeder first, wherever it sits in the list.
  AnnounceRequest me = Req("me", 8, false);
  me.self.ip = Ip("10.9.9.8");
  me.numwant = 50;
  auto r = s.Announce(me, 1002);
  REQUIRE(r.ok());
  REQUIRE(r->peers.size() == 50);
  CHECK(r->peers[0].ip.ToString() == "10.9.9.9");
  CHECK(r->complete == 1);
  CHECK(r->incomplete == 20001);
  // Replies start at random places, so leechers do not all get the same 49.
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    auto again = s.Announce(me, 1003 + i);
    REQUIRE(again.ok());
    for (const auto& p : again->peers) seen.insert(p.ip.ToString());
  }
  CHECK(seen.size() > 300);
  CHECK(s.Stats(2000).peers == 20002);
  CHECK(s.Stats(2000).held == 20001);
  // Held peers never expire; the asker, announcing plainly, does.
  CHECK(s.Stats(10'000'000).peers == 20001);
}

TEST_CASE("an asker without a zone gets peers of every zone", "[swarm]") {
  SwarmStore s(15000, 15000, kRoomy);
  (void)s.Announce(Req("seed-a", 1, true, "a"), 1000);
  (void)s.Announce(Req("seed-b", 2, true, "b"), 1000);
  (void)s.Announce(Req("seed-none", 3, true), 1000);
  auto r = s.Announce(Req("me", 9, false), 1001);
  REQUIRE(r.ok());
  std::set<uint16_t> ports;
  for (const PeerEndpoint& p : r->peers) ports.insert(p.port);
  CHECK(ports == std::set<uint16_t>{1, 2, 3});
}

TEST_CASE("a plain announce cannot pose as an agent session's peer", "[swarm]") {
  SwarmStore s(15000, 15000, kRoomy);
  AnnounceRequest held = Req("whatever", 1, true);
  held.holder = 7;
  held.holder_agent = "agent-7";
  REQUIRE(s.Announce(held, 0).ok());
  // The session's holder number as a peer id, byte for byte.
  AnnounceRequest plain = Req("", 2, true);
  plain.peer_id.assign(20, '\0');
  plain.peer_id[0] = 7;
  plain.event = AnnounceRequest::Event::kStopped;
  REQUIRE(s.Announce(plain, 1).ok());
  CHECK(s.Stats(1).held == 1);
  CHECK(s.Stats(1).peers == 1);
}

TEST_CASE("IPv4 and IPv6 peers come back in their compact forms", "[swarm]") {
  SwarmStore s(15000, 15000, kRoomy);
  AnnounceRequest v6 = Req("six", 0x1234, true);
  v6.self.ip = Ip("2001:db8::8");
  (void)s.Announce(v6, 1000);
  (void)s.Announce(Req("four", 0x0102, true), 1000);
  auto r = s.Announce(Req("me", 9, false), 1001);
  REQUIRE(r.ok());
  std::string v4, v6bytes;
  CompactPeers(r->peers, &v4, &v6bytes);
  CHECK(v4 == std::string("\x0a\x00\x00\x01\x01\x02", 6));
  REQUIRE(v6bytes.size() == 18);
  CHECK(v6bytes.substr(16) == "\x12\x34");
  CHECK(PeerAddress::Parse("not an address") == std::nullopt);
  CHECK(Ip("2001:db8::8").ToString() == "2001:db8::8");
}
