// Agents that find each other only through a real shoal-tracker's /announce.
#include <catch2/catch.hpp>

#include "p2p_test_support.h"
#include "support/tracker_process.h"

namespace shoal {
namespace testing {

TEST_CASE("agents find each other through the tracker's announce endpoint", "[p2p]") {
  P2pTempDir tmp;
  TrackerProcess tracker(tmp.path() + "/tracker", {"--origin", "file://" + tmp.path() + "/origin"});
  tracker.Start();
  std::string token = tracker.MintToken("team-a", "read", "agent");
  std::string url = "http://127.0.0.1:" + std::to_string(tracker.http_port()) +
                    "/announce?token=" + token + "&zone=rack-1";

  TestFile f = MakeFile(21, 9 * 256 * 1024 + 4321, 256 * 1024);
  Agent seeder, leecher;
  seeder.Seed(f);
  auto sid = seeder.engine->AddFile(f.entry, f.piece_size, url);
  REQUIRE(sid.ok());
  auto lid = leecher.engine->AddFile(f.entry, f.piece_size, url);
  REQUIRE(lid.ok());
  // No ConnectPeer: the leecher learns the seeder from the tracker.
  REQUIRE(leecher.WaitComplete(*lid, std::chrono::seconds(40)));
  CHECK(leecher.Materialized(f) == f.data);
}

}  // namespace testing
}  // namespace shoal
