// A flood on the daemons' ports must not starve ordinary work: 2,000 idle
// connections and a sender of one byte a second against an agent's HTTP
// port and against the tracker's HTTP and RPC ports, while a pull and a
// read through that agent complete with identical bytes.
//
// What it proves, and what it does not. Other loopback addresses stand in
// for other hosts (127.0.0.1 is the pods, the CLI and the agents):
// - HTTP ports: the 2,000 connections come from eight addresses, 250 each,
//   under the per-client cap (256), so the server holds all 2,000 open at
//   once (the test checks its gauge) while it serves the pull's announces,
//   the read and /metrics: idle connections cost no thread.
// - RPC port: the 2,000 come from one address; its share of the slots for
//   connections without a token (32 of 256) closes all but 32 at accept,
//   so that host cannot fill them, and the read's and the pull's new
//   tracker connections from 127.0.0.1 get in.
// - Each slow sender is cut at its deadline (the header timeout, or the RPC
//   auth timeout), however steadily it sends.
// A flood spread over enough addresses to fill the totals is met by
// fairness, not by these caps: a newcomer takes the busiest address's
// oldest idle place (tests/server/http_eviction_test.cpp and the tracker's
// RPC guard tests show it).
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "integration/pull_cluster.h"
#include "integration/raw_clients.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

TEST_CASE(
    "2000 idle connections and a byte-a-second sender on each port do not stop a pull or a "
    "read",
    "[agent][tracker][limits][flood]") {
  // Header timeouts of 15 s (default 10 s) leave the pull and the read
  // room to finish while every idle connection is still held.
  PullCluster c(2, "1GiB", {"--http-header-timeout", "15s"}, {"--http-header-timeout-ms", "15000"});
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 31);
  c.PublishOk(ckpt, "team-a/m", 0);

  AgentProcess& agent = *c.agents[1];
  const int tracker_rpc =
      std::stoi(c.tracker.rpc_address().substr(c.tracker.rpc_address().rfind(':') + 1));
  std::vector<std::string> hosts;
  for (int i = 2; i <= 9; ++i) hosts.push_back("127.0.0." + std::to_string(i));

  const std::string slow_http =
      "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: " + std::string(60, 's');
  ByteASecond slow_agent(agent.http_port(), "127.0.0.20", slow_http);
  ByteASecond slow_tracker_http(c.tracker.http_port(), "127.0.0.20", slow_http);
  // A Cap'n Proto frame header (one segment of 100 words), then its body.
  const uint32_t frame_header[2] = {0, 100};
  ByteASecond slow_tracker_rpc(
      tracker_rpc, "127.0.0.20",
      std::string(reinterpret_cast<const char*>(frame_header), 8) + std::string(60, '\0'));
  auto start = std::chrono::steady_clock::now();
  IdleFlood agent_flood(agent.http_port(), 2000, hosts);
  IdleFlood tracker_http_flood(c.tracker.http_port(), 2000, hosts);
  IdleFlood tracker_rpc_flood(tracker_rpc, 2000, {"127.0.0.10"});
  REQUIRE(agent_flood.connected() == 2000);
  REQUIRE(tracker_http_flood.connected() == 2000);
  REQUIRE(tracker_rpc_flood.connected() == 2000);

  pid_t pull = c.StartPull(1, "team-a/m:latest", c.tmp / "pulled");
  CurlAnswer read = c.Curl(
      {"-H", "Authorization: Bearer " + c.reader, c.FileUrl(1, "m", "model-00001.safetensors")});
  int pull_exit = WaitProcess(pull);
  double busy_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(Slurp(c.tmp / "pulled.log") << "\nthe pull and read took " << busy_s << " s");
  CHECK(pull_exit == 0);
  CHECK(SameTree(ckpt, c.tmp / "pulled"));
  CHECK(read.status == 200);
  CHECK(read.body == Slurp(ckpt + "/model-00001.safetensors"));

  // The HTTP floods were held whole the while; the RPC flood was cut to
  // its address's share of the tokenless slots at accept.
  CHECK(agent.Metric("shoal_http_connections{listener=\"http\"}") >= 2000);
  CHECK(c.tracker.Metric("shoal_http_connections{listener=\"http\"}") >= 2000);
  CHECK(agent_flood.StillOpen() == 2000);
  CHECK(tracker_http_flood.StillOpen() == 2000);
  CHECK(tracker_rpc_flood.StillOpen() <= 32);  // the rest go at the auth timeout
  CHECK(c.tracker.Metric("shoal_tracker_rpc_connections_refused_total{reason=\"too_many_"
                         "unauthenticated_from_client\"}") == 2000 - 32);

  // Each slow sender is cut at its deadline: the header timeout (15 s
  // here) on HTTP, the auth timeout (10 s) on RPC.
  double agent_held = slow_agent.Held();
  double tracker_held = slow_tracker_http.Held();
  double rpc_held = slow_tracker_rpc.Held();
  CHECK(agent_held > 13);
  CHECK(agent_held < 18);
  CHECK(tracker_held > 13);
  CHECK(tracker_held < 18);
  CHECK(rpc_held > 8);
  CHECK(rpc_held < 13);
  CHECK(agent.Metric(
            "shoal_http_connections_cut_total{listener=\"http\",reason=\"header_timeout\"}") >= 1);
}
