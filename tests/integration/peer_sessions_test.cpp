// Agents with several peer sessions (`shoald --peer-sessions N`): real
// agents and a real tracker on 127.0.0.1 move a version of many files whose
// torrents are spread over the sessions, whole and byte-identical, all of it
// from peers, with peer TLS (the default) and with membership proofs
// (`--peer-security auth`), and between agents that run different numbers
// of sessions.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

// Six files of a few MiB and two small ones: eight torrents (the small
// files share one bundle), enough that each of two sessions gets some.
uint64_t WriteCheckpoint(const std::string& dir) {
  uint64_t total = 0;
  for (int i = 0; i < 6; ++i) {
    const uint64_t size = (2u << 20) + 4099u * static_cast<uint64_t>(i);
    WriteRandomFile(dir + "/model-0000" + std::to_string(i) + ".safetensors", size, 70 + i);
    total += size;
  }
  WriteRandomFile(dir + "/config.json", 1500, 80);
  WriteRandomFile(dir + "/tokenizer.json", 9000, 81);
  return total + 1500 + 9000;
}

// A sample of a per-session metric (labels in the order /metrics writes them).
std::string Session(const std::string& metric, int k, const std::string& direction = "") {
  const std::string d = direction.empty() ? "" : "direction=\"" + direction + "\",";
  return metric + "{" + d + "session=\"" + std::to_string(k) + "\"}";
}

// Pulls team-a/m:latest through `agent` into `to`; checks it whole, every
// byte from peers.
void PullFromPeers(TestCluster& c, AgentProcess& agent, const std::string& to,
                   const std::string& ckpt, uint64_t total) {
  ProcessResult pull = RunProcess(
      {CliBinary(), "pull", "team-a/m:latest", "--to", to, "--agent", agent.socket(), "--json"},
      {"SHOAL_TOKEN=" + c.reader});
  INFO(pull.out << pull.err);
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(ckpt, to));
  CHECK_THAT(pull.out, Catch::Contains("\"bytes_from_peers\":" + std::to_string(total)));
}

// Session k of `agent` sent payload. libtorrent adds a connection's bytes
// to its session's counters on a one-second tick, and the agent samples
// them twice a second: give it those ticks.
bool SessionSent(const AgentProcess& agent, int k) {
  for (int tick = 0; tick < 40; ++tick) {
    if (agent.Metric(Session("shoal_agent_peer_session_bytes_total", k, "out")) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Both of `agent`'s sessions carry torrents and sent payload.
void BothSessionsServed(const AgentProcess& agent) {
  for (int k = 0; k < 2; ++k) {
    INFO("session " << k);
    CHECK(agent.Metric(Session("shoal_agent_peer_session_torrents", k)) > 0);
    CHECK(agent.Metric(Session("shoal_agent_peer_session_port", k)) == agent.peer_port() + k);
    CHECK(SessionSent(agent, k));
  }
}

}  // namespace

TEST_CASE("agents with two peer sessions move a many-file version over TLS", "[agent][sessions]") {
  ClusterOptions o;
  o.agent_flags = {"--peer-sessions", "2"};
  TestCluster c(o);
  AgentProcess& seeder = c.AddAgent();
  AgentProcess& first = c.AddAgent();
  AgentProcess& second = c.AddAgent();
  const std::string ckpt = c.tmp / "ckpt";
  const uint64_t total = WriteCheckpoint(ckpt);
  c.PublishOk(ckpt, "team-a/m", 0);
  CHECK(seeder.Metric("shoal_agent_peer_tls") == 1);
  PullFromPeers(c, first, c.tmp / "out1", ckpt, total);
  PullFromPeers(c, second, c.tmp / "out2", ckpt, total);
  BothSessionsServed(seeder);
  // The tracker names each agent by its sessions' ports.
  const std::string admin = c.tracker.MintToken("*", "read", "ops");
  const std::string agents =
      c.Curl({"-H", "Authorization: Bearer " + admin,
              "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) + "/v1/agents"})
          .body;
  INFO(agents);
  CHECK_THAT(agents, Catch::Contains(":" + std::to_string(seeder.peer_port()) + "-" +
                                     std::to_string(seeder.peer_port() + 1)));
}

TEST_CASE("agents with two peer sessions move a many-file version with membership proofs",
          "[agent][sessions][auth]") {
  ClusterOptions o;
  o.tracker_flags = {"--announce-interval", "1s", "--peer-security", "auth"};
  o.agent_flags = {"--peer-sessions", "2"};
  TestCluster c(o);
  AgentProcess& seeder = c.AddAgent();
  AgentProcess& leecher = c.AddAgent();
  const std::string ckpt = c.tmp / "ckpt";
  const uint64_t total = WriteCheckpoint(ckpt);
  c.PublishOk(ckpt, "team-a/m", 0);
  CHECK(seeder.Metric("shoal_agent_peer_auth") == 1);
  PullFromPeers(c, leecher, c.tmp / "out", ckpt, total);
  BothSessionsServed(seeder);
  CHECK(leecher.Metric("shoal_agent_peer_auth_admitted_total") >= 2);
}

TEST_CASE("agents with one and with three peer sessions pull from each other",
          "[agent][sessions]") {
  TestCluster c;
  AgentProcess& one = c.AddAgent({"--peer-sessions", "1"});
  AgentProcess& three = c.AddAgent({"--peer-sessions", "3"});
  const std::string ckpt = c.tmp / "ckpt";
  const uint64_t total = WriteCheckpoint(ckpt);
  c.PublishOk(ckpt, "team-a/m", 0);
  PullFromPeers(c, three, c.tmp / "out3", ckpt, total);
  // And back: the one-session agent pulls from a cache the other filled.
  AgentProcess& other = c.AddAgent({"--peer-sessions", "1"});
  one.Stop();
  PullFromPeers(c, other, c.tmp / "out1", ckpt, total);
  // The three-session agent served from more than one of its sessions.
  int sessions_used = 0;
  for (int k = 0; k < 3; ++k) sessions_used += SessionSent(three, k) ? 1 : 0;
  CHECK(sessions_used >= 2);
}
