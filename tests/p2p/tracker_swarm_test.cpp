// Agents that find each other only through a real shoal-tracker's /announce.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "p2p/p2p_test_support.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

namespace shoal {
namespace testing {

namespace {

// Publishes `f` as team-a/m with the real CLI, so the tracker knows its
// torrent; announces for unpublished torrents are refused.
void PublishToTracker(const TestFile& f, const TrackerProcess& tracker, const std::string& root) {
  std::string dir = root + "/ckpt";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + f.entry.path, std::ios::binary)
      .write(reinterpret_cast<const char*>(f.data.data()),
             static_cast<std::streamsize>(f.data.size()));
  auto pub = RunProcess({CliBinary(), "publish", dir, "--name", "team-a/m", "--piece-size",
                         std::to_string(f.piece_size), "--no-seed"},
                        {"SHOAL_TRACKER=" + tracker.rpc_address(),
                         "SHOAL_TOKEN=" + tracker.MintToken("team-a", "write", "trainer"),
                         "SHOAL_ORIGIN=file://" + root + "/origin"});
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);
}

}  // namespace

TEST_CASE("agents find each other through the tracker's announce endpoint", "[p2p]") {
  P2pTempDir tmp;
  std::filesystem::create_directories(tmp.path() + "/origin");
  TrackerProcess tracker(tmp.path() + "/tracker", {"--origin", "file://" + tmp.path() + "/origin"});
  tracker.Start();
  std::string token = tracker.MintToken("team-a", "read", "agent");
  std::string url = "http://127.0.0.1:" + std::to_string(tracker.http_port()) +
                    "/announce?token=" + token + "&zone=rack-1";

  TestFile f = MakeFile(21, 9 * 256 * 1024 + 4321, 256 * 1024);
  PublishToTracker(f, tracker, tmp.path());
  // Peer TLS is on, as by default: the torrents carry the tracker's peer
  // CA, and each engine holds a certificate from it, as agents get theirs.
  auto ca = PeerCa::LoadOrCreate(tracker.data_dir());
  REQUIRE(ca.ok());
  Agent seeder(AwaitingOptions()), leecher(AwaitingOptions());
  REQUIRE(seeder.engine->SetPeerIdentity(IdentityFor(**ca, **ca, "seeder")).ok());
  REQUIRE(leecher.engine->SetPeerIdentity(IdentityFor(**ca, **ca, "leecher")).ok());
  seeder.Seed(f);
  auto sid = seeder.engine->AddFile(f.entry, f.piece_size, url);
  REQUIRE(sid.ok());
  auto lid = leecher.engine->AddFile(f.entry, f.piece_size, url);
  REQUIRE(lid.ok());
  // No ConnectPeer: the leecher learns the seeder from the tracker.
  REQUIRE(leecher.WaitComplete(*lid, std::chrono::seconds(40)));
  CHECK(leecher.Materialized(f) == f.data);
  CHECK(tracker.Metric("shoal_tracker_swarm_peers") == 2);
  CHECK(tracker.Metric("shoal_tracker_announces_refused_total{reason=\"torrent\"}") == 0);
}

}  // namespace testing
}  // namespace shoal
