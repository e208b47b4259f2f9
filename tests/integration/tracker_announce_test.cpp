// The tracker's /announce endpoint probed the way a hostile or careless
// client would, with curl against a real shoal-tracker: strict numbers,
// torrents the token may read, expiry and the swarm limits.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "support/announced_hash.h"
#include "support/published_file.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

// GET /announce with these parameters (values sent percent-encoded);
// returns the bencoded body.
std::string Announce(const TrackerProcess& tracker,
                     const std::map<std::string, std::string>& params) {
  std::string url = "http://127.0.0.1:" + std::to_string(tracker.http_port()) + "/announce?";
  for (const auto& [k, v] : params) url += k + "=" + PercentEncode(v) + "&";
  return RunProcess({"/usr/bin/curl", "-s", "--max-time", "5", url}).out;
}

// A tracker alone on a folder origin, with `flags`.
struct AnnounceCluster : TestCluster {
  explicit AnnounceCluster(std::vector<std::string> flags = {})
      : TestCluster(Options(std::move(flags))) {}
  static ClusterOptions Options(std::vector<std::string> flags) {
    ClusterOptions options;
    options.tracker_flags = std::move(flags);
    return options;
  }
};

}  // namespace

TEST_CASE("an announce with a negative port that strtoul would wrap is refused",
          "[tracker][announce]") {
  AnnounceCluster c;
  std::string token = c.tracker.MintToken("*", "read", "agent");
  std::map<std::string, std::string> probe = {{"token", token},
                                              {"info_hash", std::string(20, '\x11')},
                                              {"peer_id", std::string(20, 'p')},
                                              {"port", "-18446744073709550617"},
                                              {"left", "0"}};
  std::string reply = Announce(c.tracker, probe);
  CHECK_THAT(reply,
             Catch::Contains("failure reason") && Catch::Contains("port: must be a whole number"));
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 0);

  for (const auto& [key, bad] : std::map<std::string, std::string>{{"port", "+6881"},
                                                                   {"numwant", "-1"},
                                                                   {"left", "0x10"},
                                                                   {"uploaded", "1 "},
                                                                   {"downloaded", "1e3"}}) {
    auto params = probe;
    params["port"] = "6881";
    params[key] = bad;
    INFO(key << "=" << bad);
    CHECK_THAT(Announce(c.tracker, params),
               Catch::Contains("failure reason") && Catch::Contains(key + ": "));
  }
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 0);
}

TEST_CASE("the audit log refuses an 'after' that is not a plain number", "[tracker]") {
  AnnounceCluster c;
  std::string admin = c.tracker.MintToken("*", "admin", "ops");
  std::string base =
      "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) + "/v1/audit?after=";
  auto get = [&](const std::string& after) {
    return RunProcess({"/usr/bin/curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w",
                       "%{http_code}", "-H", "Authorization: Bearer " + admin, base + after})
        .out;
  };
  CHECK(get("0") == "200");
  CHECK(get("-1") == "400");
  CHECK(get("5x") == "400");
}

namespace {

PublishedFile Publish(AnnounceCluster& c, const std::string& ns, unsigned seed,
                      const std::string& model = "m") {
  return PublishOneFile(c, ns, seed, model);
}

std::map<std::string, std::string> PeerAnnounce(const std::string& token,
                                                const std::string& info_hash,
                                                const std::string& peer, int port) {
  return {{"token", token},
          {"info_hash", info_hash},
          {"peer_id", peer + std::string(20 - peer.size(), '-')},
          {"port", std::to_string(port)},
          {"left", "0"}};
}

bool Accepted(const std::string& reply) {
  return reply.find("failure reason") == std::string::npos &&
         reply.find("8:intervali") != std::string::npos;
}

}  // namespace

TEST_CASE("announced peers expire, and the swarm metrics count only live ones",
          "[tracker][announce][swarm]") {
  AnnounceCluster c(
      {"--announce-interval", "1s", "--seed-announce-interval", "1s"});  // peers expire after 3 s
  PublishedFile f = Publish(c, "team-a", 1);
  std::string token = c.tracker.MintToken("*", "read", "agent");
  REQUIRE(Accepted(Announce(c.tracker, PeerAnnounce(token, f.info_hash, "seed-1", 7001))));
  REQUIRE(Accepted(Announce(c.tracker, PeerAnnounce(token, f.info_hash, "seed-2", 7002))));
  CHECK(c.tracker.Metric("shoal_tracker_swarms") == 1);
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 2);

  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  CHECK(c.tracker.Metric("shoal_tracker_swarms") == 0);
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 0);
  // A newcomer finds nobody: the silent peers are gone, not just hidden.
  std::string reply = Announce(c.tracker, PeerAnnounce(token, f.info_hash, "late", 7003));
  CHECK(Accepted(reply));
  CHECK_THAT(reply, Catch::Contains("5:peers0:"));
}

TEST_CASE("a seeder is told to re-announce less often than a leecher",
          "[tracker][announce][swarm]") {
  AnnounceCluster c({"--announce-interval", "5s", "--seed-announce-interval", "2m"});
  PublishedFile f = Publish(c, "team-a", 3);
  std::string token = c.tracker.MintToken("*", "read", "agent");
  CHECK_THAT(Announce(c.tracker, PeerAnnounce(token, f.info_hash, "seed", 7001)),
             Catch::Contains("8:intervali120e"));
  auto leecher = PeerAnnounce(token, f.info_hash, "leech", 7002);
  leecher["left"] = "1000";
  std::string reply = Announce(c.tracker, leecher);
  CHECK_THAT(reply, Catch::Contains("8:intervali5e"));
  CHECK_THAT(reply, Catch::Contains("8:completei1e"));  // the seeder is listed
}

TEST_CASE("an announce for a torrent no published version holds is refused",
          "[tracker][announce][swarm]") {
  AnnounceCluster c;
  Publish(c, "team-a", 2);
  std::string token = c.tracker.MintToken("*", "read", "agent");
  for (int i = 0; i < 20; ++i) {
    std::string random_hash(20, static_cast<char>(i));
    std::string reply = Announce(c.tracker, PeerAnnounce(token, random_hash, "peer", 7000 + i));
    CHECK_THAT(reply, Catch::Contains("not a file of any published version"));
  }
  CHECK(c.tracker.Metric("shoal_tracker_swarms") == 0);
  CHECK(c.tracker.Metric("shoal_tracker_announces_refused_total{reason=\"torrent\"}") == 20);
}

TEST_CASE("a token for one namespace cannot announce another namespace's file",
          "[tracker][announce][swarm]") {
  AnnounceCluster c;
  PublishedFile b_file = Publish(c, "team-b", 3);
  std::string a_reader = c.tracker.MintToken("team-a", "read", "pod-a");
  std::string a_writer = c.tracker.MintToken("team-a", "write", "trainer-a");
  CHECK_THAT(Announce(c.tracker, PeerAnnounce(a_reader, b_file.info_hash, "pod-a", 7001)),
             Catch::Contains("not a file of any published version"));
  CHECK_THAT(Announce(c.tracker, PeerAnnounce(a_writer, b_file.info_hash, "trainer-a", 7002)),
             Catch::Contains("not a file of any published version"));
  CHECK(c.tracker.Metric("shoal_tracker_swarms") == 0);
  CHECK(Accepted(Announce(c.tracker, PeerAnnounce(c.tracker.MintToken("team-b", "read", "pod-b"),
                                                  b_file.info_hash, "pod-b", 7003))));
  CHECK(Accepted(Announce(c.tracker, PeerAnnounce(c.tracker.MintToken("*", "read", "agent"),
                                                  b_file.info_hash, "agent", 7004))));
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 2);
}

TEST_CASE("the swarm limits hold, with a reason, and known peers still re-announce",
          "[tracker][announce][swarm]") {
  AnnounceCluster c({"--max-swarms", "1", "--max-swarm-peers", "3"});
  PublishedFile one = Publish(c, "team-a", 4);
  PublishedFile two = Publish(c, "team-a", 5);
  std::string token = c.tracker.MintToken("*", "read", "agent");
  auto join = [&](const PublishedFile& f, int i) {
    return Announce(c.tracker,
                    PeerAnnounce(token, f.info_hash, "peer-" + std::to_string(i), 7000 + i));
  };
  REQUIRE(Accepted(join(one, 0)));
  REQUIRE(Accepted(join(one, 1)));
  CHECK_THAT(join(two, 9), Catch::Contains("limit of 1 swarms"));
  REQUIRE(Accepted(join(one, 2)));
  CHECK_THAT(join(one, 3), Catch::Contains("limit of 3 peers"));
  CHECK(Accepted(Announce(c.tracker, PeerAnnounce(token, one.info_hash, "peer-0", 7000))));
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 3);
  CHECK(c.tracker.Metric("shoal_tracker_announces_refused_total{reason=\"full\"}") == 2);
}

TEST_CASE("a torrent may be announced while a version holds its file, across restarts",
          "[tracker][announce][swarm]") {
  AnnounceCluster c;
  PublishedFile first = Publish(c, "team-a", 6, "m");
  PublishedFile second = Publish(c, "team-a", 6, "copy");  // the same bytes in another model
  REQUIRE(first.info_hash == second.info_hash);
  std::string token = c.tracker.MintToken("*", "read", "agent");
  std::string admin = c.tracker.MintToken("*", "admin", "ops");
  auto rm = [&](const std::string& ref) {
    return RunProcess({CliBinary(), "rm", ref},
                      {"SHOAL_TRACKER=" + c.tracker.rpc_address(), "SHOAL_TOKEN=" + admin})
        .exit_code;
  };

  c.tracker.Stop();
  c.tracker.Start();  // the index is rebuilt from the registry
  CHECK(Accepted(Announce(c.tracker, PeerAnnounce(token, first.info_hash, "agent", 7001))));
  REQUIRE(rm(first.ref) == 0);
  CHECK(Accepted(Announce(
      c.tracker, PeerAnnounce(token, first.info_hash, "agent", 7001))));  // "copy" holds it
  REQUIRE(rm(second.ref) == 0);
  CHECK_THAT(Announce(c.tracker, PeerAnnounce(token, first.info_hash, "agent", 7001)),
             Catch::Contains("not a file of any published version"));
  CHECK(c.tracker.Metric("shoal_tracker_torrents") == 0);
}
