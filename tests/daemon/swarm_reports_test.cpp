#include "daemon/swarm_reports.h"

#include <catch2/catch.hpp>

using namespace shoal;

namespace {

RelayedAnnounce Ann(char torrent, uint64_t left,
                    RelayedAnnounce::Event event = RelayedAnnounce::Event::kNone) {
  RelayedAnnounce a;
  a.info_hash = std::string(20, torrent);
  a.event = event;
  a.left = left;
  a.port = 7000;
  return a;
}

// Collects what an announce was answered with.
struct Answers {
  std::vector<Result<std::string>> got;
  AnnounceDone Done() {
    return [this](Result<std::string> r) { got.push_back(std::move(r)); };
  }
};

SwarmAnswer Peers(const std::string& compact, uint32_t complete, uint32_t incomplete) {
  SwarmAnswer a;
  a.peers4 = compact;
  a.complete = complete;
  a.incomplete = incomplete;
  return a;
}

const std::string kPeer("\x0a\x00\x00\x02\x1b\x58", 6);  // 10.0.0.2:7000

std::string Body(int64_t interval_s, uint32_t complete, uint32_t incomplete) {
  return "d8:completei" + std::to_string(complete) + "e10:incompletei" +
         std::to_string(incomplete) + "e8:intervali" + std::to_string(interval_s) +
         "e12:min intervali1e5:peers6:" + kPeer + "6:peers60:e";
}

}  // namespace

TEST_CASE("a seeder still seeding is answered from the tracker's last reply, with no call",
          "[swarm-reports]") {
  SwarmReports r;
  Answers a;
  CHECK(r.Announce(Ann('a', 0, RelayedAnnounce::Event::kStarted), a.Done()));
  CHECK(a.got.empty());  // waits for the batch
  std::vector<SwarmChange> batch = r.Take(10);
  REQUIRE(batch.size() == 1);
  CHECK(batch[0].state == SwarmState::kSeeding);
  CHECK(batch[0].want_peers);
  r.Settle(std::move(batch), {Peers(kPeer, 1, 1)}, 5000, 60000);
  REQUIRE(a.got.size() == 1);
  CHECK(*a.got[0] == Body(60, 1, 1));

  CHECK_FALSE(r.Announce(Ann('a', 0), a.Done()));
  REQUIRE(a.got.size() == 2);
  CHECK(*a.got[1] == Body(60, 1, 1));
  CHECK_FALSE(r.HasQueued());
  CHECK(r.answered_locally() == 1);
  CHECK(r.changes_sent() == 1);
}

TEST_CASE("a burst of starts is one batch, and every leecher announce is a change",
          "[swarm-reports]") {
  SwarmReports r;
  Answers a;
  for (int i = 0; i < 200; ++i) r.Announce(Ann(static_cast<char>(i), 100), a.Done());
  r.Announce(Ann(0, 100), a.Done());  // the same torrent again: one entry
  std::vector<SwarmChange> batch = r.Take(4096);
  CHECK(batch.size() == 200);
  CHECK(batch[0].waiters.size() == 2);
  std::vector<SwarmAnswer> answers(200, Peers(kPeer, 1, 1));
  r.Settle(std::move(batch), answers, 5000, 60000);
  REQUIRE(a.got.size() == 201);
  CHECK(*a.got[0] == Body(5, 1, 1));
  CHECK(r.Announce(Ann(0, 50), a.Done()));  // still downloading: needs fresh peers
  CHECK(r.Take(4096).size() == 1);
}

TEST_CASE("a refused entry or a failed batch is sent again on the next announce",
          "[swarm-reports]") {
  SwarmReports r;
  Answers a;
  r.Announce(Ann('a', 0), a.Done());
  SwarmAnswer refused;
  refused.error = "limit of 1 swarms";
  r.Settle(r.Take(10), {refused}, 5000, 60000);
  REQUIRE(a.got.size() == 1);
  CHECK_FALSE(a.got[0].ok());
  CHECK(r.Announce(Ann('a', 0), a.Done()));
  r.Fail(r.Take(10), Status::Unavailable("connection lost"));
  REQUIRE(a.got.size() == 2);
  CHECK_THAT(a.got[1].status().ToString(), Catch::Contains("connection lost"));
  CHECK(r.Announce(Ann('a', 0), a.Done()));
}

TEST_CASE("a new session gets every torrent again, and a stopped one is forgotten",
          "[swarm-reports]") {
  SwarmReports r;
  Answers a;
  r.Announce(Ann('a', 0), a.Done());
  r.Announce(Ann('b', 0), a.Done());
  r.Settle(r.Take(10), {Peers("", 0, 0), Peers("", 0, 0)}, 5000, 60000);

  CHECK(r.Resend());
  std::vector<SwarmChange> again = r.Take(10);
  REQUIRE(again.size() == 2);
  CHECK_FALSE(again[0].want_peers);  // nobody waits: record only
  r.Settle(std::move(again), {Peers("", 0, 0), Peers("", 0, 0)}, 5000, 60000);

  CHECK(r.Announce(Ann('b', 0, RelayedAnnounce::Event::kStopped), a.Done()));
  CHECK(a.got.size() == 3);  // a stop is answered at once
  std::vector<SwarmChange> stop = r.Take(10);
  REQUIRE(stop.size() == 1);
  CHECK(stop[0].state == SwarmState::kStopped);
  r.Settle(std::move(stop), {SwarmAnswer{}}, 5000, 60000);
  CHECK(r.Resend());
  CHECK(r.Take(10).size() == 1);  // only 'a'

  r.Announce(Ann('c', 10), a.Done());
  r.DropQueued(Status::Unavailable("not registered"));
  CHECK_FALSE(a.got.back().ok());
  CHECK_FALSE(r.HasQueued());
}

TEST_CASE("a relayed announce needs a 20-byte info_hash and a port", "[swarm-reports]") {
  std::map<std::string, std::string> q = {
      {"info_hash", std::string(20, 'x')}, {"port", "7000"}, {"left", "0"}, {"event", "started"}};
  Result<RelayedAnnounce> a = ParseRelayedAnnounce(q);
  REQUIRE(a.ok());
  CHECK(a->left == 0);
  CHECK(a->event == RelayedAnnounce::Event::kStarted);
  q["port"] = "-1";
  CHECK_FALSE(ParseRelayedAnnounce(q).ok());
  q["port"] = "7000";
  q["info_hash"] = "short";
  CHECK_FALSE(ParseRelayedAnnounce(q).ok());
}
