// What a running shoald's peer port holds before a peer is known: a real
// tracker and agent on 127.0.0.1 with a seeded model, and raw sockets that
// stop or crawl through the BitTorrent handshake. The probes that need a
// served info-hash are in tests/p2p/peer_port_timeout_test.cpp; these need
// none, so they check the daemon's own flags and defaults.
#include <catch2/catch.hpp>

#include "support/handshake_probe.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

TEST_CASE("shoald closes half-sent and crawling handshakes within its handshake timeout",
          "[agent][peer-port]") {
  TestCluster c;
  AgentProcess& agent = c.AddAgent({"--peer-handshake-timeout-s", "5"});
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model.bin", 2 << 20, 9);
  c.PublishOk(ckpt, "team-a/m", 0);  // the agent seeds it: its port is busy as in production

  const std::string unknown(20, '\x42');
  std::vector<Probe> probes = {
      {"first 20 bytes, then silence", Handshake(unknown, 'a').substr(0, 20)},
      {"up to half the info-hash, then silence", Handshake(unknown, 'b').substr(0, 38)},
      {"a full handshake for a torrent not served", Handshake(unknown, 'c')},
      {"the handshake one byte every second", "", Handshake(unknown, 'd'),
       std::chrono::milliseconds(1000)},
  };
  Run(probes, static_cast<uint16_t>(agent.peer_port()), std::chrono::seconds(30));
  for (const Probe& p : probes) {
    INFO(p.name << ": closed after " << p.closed_after << " s");
    CHECK(p.closed_after >= 0);
    CHECK(p.closed_after <= 7.0);  // --peer-handshake-timeout-s 5, ticked once a second
  }

  // The same port still serves a real pull.
  ProcessResult pull = RunProcess(
      {CliBinary(), "pull", "team-a/m:latest", "--to", c.tmp / "out", "--agent", agent.socket()},
      {"SHOAL_TOKEN=" + c.reader});
  INFO(pull.out << pull.err);
  CHECK(pull.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
}
