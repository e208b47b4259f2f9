// A fleet of three trackers on one etcd registry, eight agents and a real S3
// origin (radosgw): a tracker killed mid-pull costs the pullers nothing but
// a moment, and the origin is still read about once per chunk, by radosgw's
// own usage log.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "../s3/s3_test_env.h"
#include "etcd/etcd_test_env.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

uint64_t RgwBytesSent() { return shoal_test::SettledRadosgwUsageBytes("bytes_sent", {"get_obj"}); }

ClusterOptions FleetS3Options(int agents) {
  shoal::OriginOptions s3 =
      shoal_test::TestOptions("fleet-test-" + std::to_string(std::random_device{}() % 1000000000));
  std::string hosts;
  for (const std::string& e : shoal_test::EtcdEndpoints()) {
    hosts += (hosts.empty() ? "" : ",") + e.substr(e.find("://") + 3);
  }
  ClusterOptions o;
  o.origin = {s3.url, s3.endpoint, s3.region, s3.access_key, s3.secret_key};
  o.trackers = 3;
  o.registry = "etcd://" + hosts + "/" + shoal_test::FreshPrefix("fleet-s3");
  o.agents = agents;
  o.cache_size = "1GiB";
  o.agents_use_origin = true;
  o.agent_flags = {"--origin-fallback-ms", "1000"};
  return o;
}

}  // namespace

TEST_CASE("a tracker of three killed mid-pull: every pull completes and the origin is read once",
          "[fleet][s3]") {
  TestCluster c(FleetS3Options(8));
  // Every agent is registered with every tracker, and is at home on one:
  // there it heartbeats at the full rate, elsewhere as away.
  double home = 0;
  for (auto* t : c.trackers) {
    CHECK(t->Metric("shoal_tracker_agents") == 8);
    home += t->Metric("shoal_tracker_agents") - t->Metric("shoal_tracker_agents_away");
  }
  CHECK(home == 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // rings settled

  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model-00001-of-00003.safetensors", 200u << 20, 1);
  WriteRandomFile(ckpt + "/model-00002-of-00003.safetensors", 200u << 20, 2);
  WriteRandomFile(ckpt + "/model-00003-of-00003.safetensors", (112u << 20) - 4096, 3);
  WriteRandomFile(ckpt + "/config.json", 900, 4);
  c.PublishOk(ckpt, "team-a/llama", -1, "4194304");
  const double unique = static_cast<double>(512u << 20) - 4096 + 900;

  const uint64_t rgw_before = RgwBytesSent();
  std::vector<pid_t> pulls;
  for (int i = 0; i < 6; ++i) {
    pulls.push_back(c.StartPull(i, "team-a/llama:latest", c.tmp / ("out" + std::to_string(i))));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const size_t victim = std::random_device{}() % c.trackers.size();
  std::printf("fleet kill: SIGKILL tracker %zu of 3, 1 s into the pulls\n", victim);
  c.trackers[victim]->Kill();

  for (int i = 0; i < 6; ++i) {
    INFO("agent " << i << ": " << Slurp(c.tmp / ("out" + std::to_string(i)) + ".log"));
    REQUIRE(WaitProcess(pulls[static_cast<size_t>(i)]) == 0);
    CHECK(SameTree(ckpt, c.tmp / ("out" + std::to_string(i))));
  }
  const uint64_t rgw_sent = RgwBytesSent() - rgw_before;
  std::printf("fleet kill: origin bytes %llu (%.3f x unique) by radosgw\n",
              static_cast<unsigned long long>(rgw_sent), static_cast<double>(rgw_sent) / unique);
  for (size_t i = 0; i < c.agents.size(); ++i) {
    std::printf("  agent %zu: %.0f origin bytes, %.0f read-origin bytes\n", i,
                c.agents[i]->Metric("shoal_agent_origin_bytes_total"),
                c.agents[i]->Metric("shoal_agent_read_origin_bytes_total"));
  }
  for (size_t i = 0; i < c.trackers.size(); ++i) {
    if (!c.trackers[i]->running()) continue;
    std::printf("  tracker %zu: %g orders, %g owner fetches, %g takeovers, budget share %g\n", i,
                c.trackers[i]->Metric("shoal_tracker_fetch_orders_total"),
                c.trackers[i]->Metric("shoal_tracker_origin_fetches_total{reason=\"owner\"}"),
                c.trackers[i]->Metric("shoal_tracker_takeovers_total"),
                c.trackers[i]->Metric("shoal_tracker_origin_budget_share"));
  }
  CHECK(static_cast<double>(rgw_sent) <= 1.05 * unique);
  // A pull whose tracker died asked another at once: none fell back to the
  // local rule, which would have non-owners fetch what owners were fetching.
  int failovers = 0;
  for (size_t i = 0; i < c.agents.size(); ++i) {
    INFO("agent " << i);
    const std::string log = c.agents[i]->log();
    CHECK_THAT(log, !Catch::Contains("pull.tracker_lost"));
    failovers += log.find("pull.tracker_failover") != std::string::npos ? 1 : 0;
  }
  std::printf("fleet kill: %d agents' pulls failed over to another tracker\n", failovers);

  // New pulls and publishes go on through the survivors.
  auto again = c.Shoal(c.reader, {"pull", "team-a/llama:latest", "--to", c.tmp / "out7", "--agent",
                                  c.agents[7]->socket()});
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out7"));
  WriteRandomFile(ckpt + "/config.json", 901, 5);
  c.PublishOk(ckpt, "team-a/llama", -1, "4194304");
}
