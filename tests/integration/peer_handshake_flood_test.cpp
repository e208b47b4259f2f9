// A flood of TLS handshakes that never finish, on an agent's peer port
// (peer TLS on, as by default), must not keep the cluster's members out.
// Each attacker connection sends the first 6 bytes of a ClientHello (a
// record header announcing 512 bytes, and the handshake type) and nothing
// more, so the agent waits for the rest; other loopback addresses stand in
// for other hosts (the agents are on 127.0.0.1).
//   - One address opens 600: the agent holds its share of the handshakes
//     (max(2, 500 / 16) = 31 at its default 500 connections) and refuses
//     the rest at once, and a member pulls from the agent meanwhile.
//   - Twenty addresses open 30 each and take all 500 slots: a member's
//     connection still gets in, by closing the oldest handshake of an
//     address that holds more than it does.
// The seeder's handshake timeout is 30 s (default 10 s), so the flood is
// held for the whole pull however slow the machine; each pull must finish
// within 20 s. With patch 03 alone, the first 500 connections were held,
// whatever their address, every connection of the member was refused, and
// its pull failed (no other source) in about 5 s.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "integration/raw_clients.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

constexpr int kPerAddress = 31;  // max(2, connections_limit / 16) at the default 500
constexpr int kLimit = 500;      // connections_limit: EngineOptions::max_connections

// `count` connections to 127.0.0.1:`port`, from `sources` in turn, each
// with 6 bytes of a ClientHello sent. Closed on destruction.
class HalfHellos {
 public:
  HalfHellos(int port, int count, const std::vector<std::string>& sources) {
    static const char kHello[] = "\x16\x03\x01\x02\x00\x01";
    for (int i = 0; i < count; ++i) {
      int fd = ConnectFrom(sources[static_cast<size_t>(i) % sources.size()], port);
      if (fd < 0) continue;
      // The agent may have refused it already; StillOpen() tells.
      (void)::send(fd, kHello, sizeof(kHello) - 1, MSG_NOSIGNAL);
      fds_.push_back(fd);
    }
  }
  ~HalfHellos() {
    for (int fd : fds_) ::close(fd);
  }
  HalfHellos(const HalfHellos&) = delete;
  HalfHellos& operator=(const HalfHellos&) = delete;

  int connected() const { return static_cast<int>(fds_.size()); }
  // Connections the agent has neither closed nor reset.
  int StillOpen() const {
    int open = 0;
    for (int fd : fds_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 0) == 0) ++open;
    }
    return open;
  }

 private:
  std::vector<int> fds_;
};

std::string Refused(const std::string& reason) {
  return "shoal_agent_peer_handshakes_refused_total{reason=\"" + reason + "\"}";
}

// A cluster whose agent 0 alone holds an 8 MiB model, and agent 1, a
// member that may not read the origin: its pulls can only come from agent 0.
struct FloodCluster {
  FloodCluster() {
    ckpt = c.tmp / "ckpt";
    WriteRandomFile(ckpt + "/model.bin", 8 << 20, 41);
    c.PublishOk(ckpt, "team-a/m", 0);
  }

  // Pulls the model through the member, at most 20 s; true if every byte
  // came from peers (the seeder alone has them) and the copy is identical.
  bool PullThroughMember() {
    auto start = std::chrono::steady_clock::now();
    ProcessResult pull =
        RunProcess({"/usr/bin/timeout", "20", CliBinary(), "pull", "team-a/m:latest", "--to",
                    c.tmp / "out", "--agent", member.socket(), "--json"},
                   {"SHOAL_TOKEN=" + c.reader});
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(pull.out << pull.err << "\nthe pull took " << seconds << " s");
    CHECK(pull.exit_code == 0);
    CHECK_THAT(pull.out, Catch::Contains("\"bytes_from_peers\":8388608"));
    return pull.exit_code == 0 && SameTree(ckpt, c.tmp / "out");
  }

  TestCluster c;
  AgentProcess& seeder = c.AddAgent({"--peer-handshake-timeout-s", "30"});
  AgentProcess& member = c.AddAgent();
  std::string ckpt;
};

}  // namespace

TEST_CASE("600 half-sent TLS handshakes from one address do not keep a member out",
          "[agent][peers][flood]") {
  FloodCluster f;
  HalfHellos flood(f.seeder.peer_port(), 600, {"127.0.0.2"});
  REQUIRE(flood.connected() == 600);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const int held = flood.StillOpen();
  INFO("attacker connections the agent holds: " << held);
  CHECK(held <= kPerAddress);

  CHECK(f.PullThroughMember());
  // It came while the flood was held: none of its handshakes timed out.
  CHECK(flood.StillOpen() == held);
  CHECK(f.seeder.Metric(Refused("too_many_handshakes")) >= 600 - kPerAddress);
}

TEST_CASE(
    "half-sent TLS handshakes from twenty addresses that take every slot do not keep a "
    "member out",
    "[agent][peers][flood]") {
  FloodCluster f;
  std::vector<std::string> hosts;
  for (int i = 2; i < 22; ++i) hosts.push_back("127.0.0." + std::to_string(i));
  // 30 each, under the share of one address: together they fill the limit.
  HalfHellos flood(f.seeder.peer_port(), 600, hosts);
  REQUIRE(flood.connected() == 600);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const int held = flood.StillOpen();
  INFO("attacker connections the agent holds: " << held);
  REQUIRE(held == kLimit);
  CHECK(f.seeder.Metric(Refused("too_many_handshakes")) == 600 - kLimit);

  CHECK(f.PullThroughMember());
  // The member's connections each closed one attacker handshake to get in.
  const double evicted = f.seeder.Metric(Refused("evicted"));
  CHECK(evicted >= 1);
  CHECK(flood.StillOpen() == held - static_cast<int>(evicted));
}
