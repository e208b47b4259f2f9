// The origin's own byte counters against radosgw's usage log, an independent
// count of what the origin served. Later egress measurements rely on both.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "s3_test_env.h"
#include "shoal/origin.h"

using namespace shoal;
using namespace shoal_test;

namespace {

// radosgw's total get_obj bytes_sent for the test user.
uint64_t RadosgwGetBytes() {
  const S3Env& env = TestS3();
  const std::string cmd =
      "timeout 30 radosgw-admin -c '" + env["SHOAL_S3_DIR"] +
      "/ceph.conf' usage show --uid=test --show-log-entries=false 2>/dev/null | "
      "/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); "
      "print(sum(c[\"bytes_sent\"] for u in d.get(\"summary\", []) for c in u[\"categories\"] "
      "if c[\"category\"] == \"get_obj\"))'";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[64] = {0};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, p);
  ::pclose(p);
  REQUIRE(n > 0);
  return std::strtoull(buf, nullptr, 10);
}

// Waits until the usage log stops moving (earlier tests' entries flushed).
uint64_t SettledGetBytes() {
  uint64_t last = RadosgwGetBytes();
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    uint64_t now = RadosgwGetBytes();
    if (now == last) return now;
    last = now;
  }
  return last;
}

}  // namespace

TEST_CASE("S3 get counters match the bytes radosgw says it served", "[s3][egress]") {
  auto origin = OpenTestS3(TestOptions("egress"));
  const std::string data = PatternBytes(3 << 20, 21);
  REQUIRE(origin->Put("obj", U8(data), data.size()).ok());

  const uint64_t before = SettledGetBytes();
  const uint64_t counted_before = origin->counters().get.bytes;
  for (const auto& [off, len] :
       std::vector<std::pair<uint64_t, uint64_t>>{{0, 3 << 20}, {1 << 20, 1 << 20}, {12345, 678}}) {
    StringSink sink;
    REQUIRE(origin->Get("obj", off, len, sink).ok());
  }
  const uint64_t expected = (3 << 20) + (1 << 20) + 678;
  const uint64_t counted = origin->counters().get.bytes - counted_before;
  CHECK(counted == expected);
  uint64_t served = 0;
  for (int i = 0; i < 20 && served != expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    served = RadosgwGetBytes() - before;
  }
  CHECK(served == expected);
}
