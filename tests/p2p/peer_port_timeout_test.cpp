// What the peer port does with connections that never become peers: a real
// engine (the agent's libtorrent session, with the agent's settings) seeding
// one file on 127.0.0.1, and raw sockets that stop or crawl partway through
// the BitTorrent handshake, or go quiet right after it.
#include <catch2/catch.hpp>

#include "p2p/p2p_test_support.h"
#include "support/handshake_probe.h"

namespace shoal {
namespace testing {

TEST_CASE("half-sent, unknown, silent and crawling handshakes are closed within 15 s",
          "[p2p][peer-port]") {
  TestFile f = MakeFile(7, 2u << 20, 1u << 20);
  Agent agent;
  agent.Seed(f);
  FileTorrentId id = agent.Add(f);
  const std::string served(reinterpret_cast<const char*>(id.data()), 20);  // v2, truncated
  const std::string unknown(20, '\x42');
  const std::chrono::milliseconds slow(2000);
  std::vector<Probe> probes = {
      {"first 20 bytes, then silence", Handshake(served, 'a').substr(0, 20)},
      {"up to half the info-hash, then silence", Handshake(served, 'b').substr(0, 38)},
      {"a full handshake for a torrent not served", Handshake(unknown, 'c')},
      {"a full handshake, then silence", Handshake(served, 'd')},
      {"the handshake one byte every 2 s", "", Handshake(served, 'e'), slow},
      {"up to the info-hash, then the peer id one byte every 2 s",
       Handshake(served, 'f').substr(0, 48), Handshake(served, 'f').substr(48), slow},
      // After a whole handshake, a message that never ends: a 16 KiB
      // piece's length, then its bytes one every 2 s.
      {"a full handshake, then a message one byte every 2 s", Handshake(served, 'g'),
       std::string("\x00\x00\x40\x09\x07", 5) + std::string(64, '\x00'), slow},
  };
  Run(probes, agent.port(), std::chrono::seconds(40));
  for (const Probe& p : probes) {
    INFO(p.name << ": closed after " << p.closed_after << " s");
    CHECK(p.closed_after >= 0);
    CHECK(p.closed_after <= 15.0);
  }
  // The two that crawled past libtorrent's own timeouts were closed by the
  // engine's deadlines, and counted.
  CHECK(agent.engine->Stats().peers_stalled >= 2);
}

TEST_CASE("a remote that crawls through keep-alives a byte at a time is closed within 20 s",
          "[p2p][peer-port]") {
  TestFile f = MakeFile(9, 2u << 20, 1u << 20);
  Agent agent;
  agent.Seed(f);
  FileTorrentId id = agent.Add(f);
  const std::string served(reinterpret_cast<const char*>(id.data()), 20);
  // Each keep-alive is a whole message, so no single one stalls for long;
  // the time spent mid-message adds up across them instead. A peer that
  // sends whole keep-alives, as an idle one does, is left alone.
  std::vector<Probe> probes = {
      {"keep-alives, one byte every 2 s", Handshake(served, 'k'), std::string(60, '\0'),
       std::chrono::milliseconds(2000)},
      {"whole keep-alives every 4 s", Handshake(served, 'l'), std::string(40, '\0'),
       std::chrono::milliseconds(4000), 4},
  };
  Run(probes, agent.port(), std::chrono::seconds(30));
  INFO(probes[0].name << ": closed after " << probes[0].closed_after << " s");
  CHECK(probes[0].closed_after >= 0);
  CHECK(probes[0].closed_after <= 20.0);
  INFO(probes[1].name << ": closed after " << probes[1].closed_after << " s");
  CHECK(probes[1].closed_after < 0);  // still open after 30 s
}

TEST_CASE("a real peer still downloads through the same port", "[p2p][peer-port]") {
  TestFile f = MakeFile(8, (2u << 20) + 4321, 256 * 1024);
  Agent seeder, leecher;
  seeder.Seed(f);
  FileTorrentId id = seeder.Add(f);
  REQUIRE(leecher.Add(f) == id);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.Materialized(f) == f.data);
}

}  // namespace testing
}  // namespace shoal
