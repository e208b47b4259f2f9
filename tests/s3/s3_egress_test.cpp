// The origin's own byte counters against radosgw's usage log, an independent
// count of what the origin served. Later egress measurements rely on both.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "s3/s3_test_env.h"
#include "shoal/origin.h"

using namespace shoal;
using namespace shoal_test;

namespace {

uint64_t RadosgwGetBytes() { return RadosgwUsageBytes("bytes_sent", {"get_obj"}); }

}  // namespace

TEST_CASE("S3 get counters match the bytes radosgw says it served", "[s3][egress]") {
  auto origin = OpenTestS3(TestOptions("egress"));
  const std::string data = PatternBytes(3 << 20, 21);
  REQUIRE(origin->Put("obj", U8(data), data.size()).ok());

  const uint64_t before = SettledRadosgwUsageBytes("bytes_sent", {"get_obj"});
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
