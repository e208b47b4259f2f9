// The loader pattern on the agent's S3 endpoint: vLLM's Run:ai streamer
// lists a version, HEADs each object and reads it in many concurrent
// ranges. Here 64 ranges at once over a cold version whose origin (the real
// radosgw) sits behind a link with 20 ms of round trip, read with boto3
// (tests/perf/loader_reads.py). What a user checks: no range is refused,
// every byte is the published one, and the origin gave each chunk once.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "../s3/s3_test_env.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

std::string UniquePrefix() {
  static std::mt19937_64 rng(std::random_device{}());
  return "loader-" + std::to_string(rng() % 1000000000);
}

// radosgw behind delay_proxy.py; stopped on destruction.
class DelayedLink {
 public:
  DelayedLink(const std::string& endpoint, const std::string& dir, int delay_ms) {
    const std::string log = dir + "/delay-proxy.log";
    pid_ = StartProcess({"/usr/bin/python3", SHOAL_DELAY_PROXY, "0",
                         endpoint.substr(endpoint.find("://") + 3), std::to_string(delay_ms)},
                        {}, log);
    for (int i = 0; i < 100 && Slurp(log).find("listening ") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string out = Slurp(log);
    REQUIRE(out.find("listening ") != std::string::npos);
    endpoint_ = "http://127.0.0.1:" + std::to_string(std::stoi(out.substr(10)));
  }
  ~DelayedLink() {
    ::kill(pid_, SIGTERM);
    WaitProcess(pid_);
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  pid_t pid_ = -1;
  std::string endpoint_;
};

// A number field of loader_reads.py's JSON ("key": 12).
long Number(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stol(json.substr(at + key.size() + 4));
}

}  // namespace

TEST_CASE(
    "64 concurrent ranged reads of a cold version: none refused, each chunk from the "
    "origin once") {
  const shoal::OriginOptions o = shoal_test::TestOptions(UniquePrefix());
  ClusterOptions options;
  options.origin = {o.url, o.endpoint, o.region, o.access_key, o.secret_key};
  options.tracker_flags = {"--s3-access-key", o.access_key,          "--s3-secret-key",
                           o.secret_key,      "--announce-interval", "1s"};
  TestCluster cluster(options);
  const std::string src = cluster.tmp.path() + "/ckpt";
  WriteRandomFile(src + "/model-00001-of-00002.safetensors", 16 << 20, 1);
  WriteRandomFile(src + "/model-00002-of-00002.safetensors", (16 << 20) - 4321, 2);
  cluster.PublishOk(src, "team-a/loader", -1);

  DelayedLink link(o.endpoint, cluster.tmp.path(), 20);
  AgentProcess& agent = cluster.AddAgent(
      {"--origin", o.url, "--s3-endpoint", link.endpoint(), "--s3-region", o.region});
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(agent.http_port()) + "/";
  auto load = [&] {
    ProcessResult r = RunProcess({"/usr/bin/python3", SHOAL_LOADER_READS, endpoint, cluster.reader,
                                  "team-a", "loader/latest/", "64", "524288", "--verify", src});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };

  const std::string cold = load();
  INFO(cold);
  CHECK(Number(cold, "objects") == 2);
  CHECK(Number(cold, "requests") == 64);
  CHECK(Number(cold, "failed") == 0);
  CHECK(Number(cold, "bytes") == (32 << 20) - 4321);
  // Every origin read of the agent, whoever asked for it: 32 chunks, each
  // once.
  const double origin = agent.Metric("shoal_agent_origin_bytes_total");
  CHECK(origin == (32 << 20) - 4321);

  const std::string warm = load();
  CHECK(Number(warm, "failed") == 0);
  CHECK(agent.Metric("shoal_agent_origin_bytes_total") == origin);
}
