// A read answers with a status and a length only when it can send the
// bytes: a real tracker and an agent that cannot reach the origin, a file
// only the origin holds, and curl, on 127.0.0.1.
#include <catch2/catch.hpp>
#include <fstream>

#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

constexpr size_t kMiB = 1 << 20;

// One agent with no origin and a 2 s first-byte bound. Model "warm" is
// seeded by that agent; model "cold" is published to the origin only, so
// no peer and no origin this agent can reach holds its bytes. Model
// "holed" starts with warm's first MiB (the same chunk, so the agent holds
// it) and goes on with bytes only the origin holds.
struct NoOrigin : TestCluster {
  std::string warm = tmp / "warm", cold = tmp / "cold", holed = tmp / "holed";
  NoOrigin() {
    AddAgent({"--read-first-byte-timeout-ms", "2000"});
    WriteRandomFile(warm + "/model.bin", 3 * kMiB + 100, 1);
    WriteRandomFile(cold + "/model.bin", 3 * kMiB + 100, 2);
    PublishOk(warm, "team-a/warm", 0);
    PublishOk(cold, "team-a/cold", -1);
    WriteRandomFile(holed + "/model.bin", 3 * kMiB, 3);
    std::string bytes = Slurp(warm + "/model.bin").substr(0, kMiB) + Slurp(holed + "/model.bin");
    std::ofstream(holed + "/model.bin", std::ios::binary | std::ios::trunc) << bytes;
    PublishOk(holed, "team-a/holed", -1);
  }
  std::string Auth() const { return "Authorization: Bearer " + reader; }
};

}  // namespace

TEST_CASE("a read whose first bytes cannot be had fails before its header, with Retry-After",
          "[agent][read][first-byte]") {
  NoOrigin c;
  for (const char* range : {"1048576-2097151", "0-99"}) {
    INFO("Range: bytes=" << range);
    CurlAnswer a = c.Curl({"-H", c.Auth(), "-r", range, c.FileUrl(0, "cold", "model.bin")}, 20);
    CHECK(a.status == 503);
    CHECK(a.exit_code == 0);  // a whole answer, not a cut connection
    CHECK(a.seconds < 10);    // the 2 s bound, plus the lookup
    CHECK(a.headers.count("content-range") == 0);
    CHECK(!a.headers["retry-after"].empty());
    CHECK(a.body.find("model.bin") != std::string::npos);  // the error says which file
    CHECK(a.body.size() < 2000);                           // an error, not file bytes
  }
  const std::string s3 = "http://127.0.0.1:" + std::to_string(c.agents[0]->http_port()) +
                         "/team-a/cold/latest/model.bin";
  CurlAnswer s3a = c.Curl({"--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                           c.reader + ":" + c.reader, "-r", "0-99", s3},
                          20);
  CHECK(s3a.status == 503);
  CHECK(s3a.body.find("<Code>ServiceUnavailable</Code>") != std::string::npos);
  CHECK(!s3a.headers["retry-after"].empty());

  // HEAD needs no bytes, so it answers at once.
  CurlAnswer head = c.Curl({"-I", "-H", c.Auth(), c.FileUrl(0, "cold", "model.bin")}, 20);
  CHECK(head.status == 200);
  CHECK(head.headers["content-length"] == std::to_string(3 * kMiB + 100));
  CHECK(head.seconds < 5);
}

TEST_CASE("a read whose bytes are here still streams, whole and by range",
          "[agent][read][first-byte]") {
  NoOrigin c;
  const std::string bytes = Slurp(c.warm + "/model.bin");
  CurlAnswer whole = c.Curl({"-H", c.Auth(), c.FileUrl(0, "warm", "model.bin")}, 20);
  CHECK(whole.status == 200);
  CHECK(whole.body == bytes);
  CurlAnswer part =
      c.Curl({"-H", c.Auth(), "-r", "1048000-2100000", c.FileUrl(0, "warm", "model.bin")}, 20);
  CHECK(part.status == 206);
  CHECK(part.headers["content-range"] == "bytes 1048000-2100000/" + std::to_string(bytes.size()));
  CHECK(part.body == bytes.substr(1048000, 2100000 - 1048000 + 1));
}

TEST_CASE("a whole read whose first chunk is here but a later one cannot be had answers 503",
          "[agent][read][first-byte]") {
  NoOrigin c;
  CurlAnswer a = c.Curl({"-H", c.Auth(), c.FileUrl(0, "holed", "model.bin")}, 20);
  CHECK(a.status == 503);
  CHECK(a.exit_code == 0);  // a whole answer, not a body cut at the missing chunk
  CHECK(a.seconds < 10);
  CHECK(!a.headers["retry-after"].empty());
  CHECK(a.body.find("model.bin") != std::string::npos);
  CHECK(a.body.find("bytes from 1048576 on") != std::string::npos);  // where the hole is
  CHECK(a.body.size() < 2000);
  // The first MiB alone is here, and is served.
  CurlAnswer head =
      c.Curl({"-H", c.Auth(), "-r", "0-1048575", c.FileUrl(0, "holed", "model.bin")}, 20);
  CHECK(head.status == 206);
  CHECK(head.body == Slurp(c.warm + "/model.bin").substr(0, kMiB));
}
