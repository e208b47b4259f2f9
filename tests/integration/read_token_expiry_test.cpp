// A read token's expiry holds even while the agent reuses its lookups: a
// real tracker and agent with a 60 s read cache, a token that lives 3 s,
// and curl, on 127.0.0.1.
#include <catch2/catch.hpp>
#include <thread>

#include "support/test_cluster.h"

using namespace shoal::testing;
using Clock = std::chrono::steady_clock;

TEST_CASE("an expired token stops reading at its expiry, not when the read cache lets go",
          "[agent][read][token]") {
  TestCluster c;
  c.AddAgent({"--origin", "file://" + c.origin, "--read-cache-ms", "60000"});
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/config.json", 900, 3);
  c.PublishOk(ckpt, "team-a/m", 0);
  const std::string url = c.FileUrl(0, "m", "config.json");

  const Clock::time_point minted = Clock::now();
  const std::string brief = c.tracker.MintToken("team-a", "read", "brief-pod", "3s");
  const std::string lasting = c.tracker.MintToken("team-a", "read", "lasting-pod", "1h");
  for (const std::string& token : {brief, lasting}) {
    CurlAnswer first = c.Curl({"-H", "Authorization: Bearer " + token, url});
    REQUIRE(first.status == 200);
    CHECK(first.body == Slurp(ckpt + "/config.json"));
  }
  REQUIRE(Clock::now() - minted < std::chrono::milliseconds(2500));  // still alive when read

  std::this_thread::sleep_until(minted + std::chrono::milliseconds(3500));
  CurlAnswer late = c.Curl({"-H", "Authorization: Bearer " + brief, url});
  INFO(late.body);
  CHECK(late.status == 401);
  CHECK(late.body.find("expired") != std::string::npos);
  CHECK(late.body.find(Slurp(ckpt + "/config.json")) == std::string::npos);

  // The same holds on the S3 face, and a token that has not expired still
  // reads from the cache.
  const std::string s3 = "http://127.0.0.1:" + std::to_string(c.agents[0]->http_port()) +
                         "/team-a/m/latest/config.json";
  CurlAnswer late_s3 =
      c.Curl({"--aws-sigv4", "aws:amz:us-east-1:s3", "--user", brief + ":" + brief, s3});
  CHECK(late_s3.status == 403);
  CHECK(late_s3.body.find("<Code>InvalidAccessKeyId</Code>") != std::string::npos);
  CHECK(late_s3.body.find("expired") != std::string::npos);
  CurlAnswer still = c.Curl({"-H", "Authorization: Bearer " + lasting, url});
  CHECK(still.status == 200);
}
