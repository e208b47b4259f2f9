// What the S3 endpoint refuses in a query before it reads anything: a
// presigned URL that would outlive S3's 7-day limit, and numbers that are
// not plain decimal digits in range. A real tracker and agent, signed URLs
// from the project's own SigV4 signer, and curl, on 127.0.0.1.
#include <catch2/catch.hpp>

#include "shoal/s3_signer.h"
#include "shoal/uri_encode.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

// A presigned GET URL for `key` in bucket team-a on `agent`, living
// `expires` seconds, signed with `token` as access key and secret.
std::string Presigned(const TestCluster& c, int agent, const std::string& token,
                      const std::string& key, uint32_t expires) {
  const std::string host = "127.0.0.1:" + std::to_string(c.agents[size_t(agent)]->http_port());
  shoal::SigV4Signer signer({token, token, ""}, "us-east-1");
  shoal::SignableRequest s;
  s.method = "GET";
  s.path = "/team-a/" + key;
  s.headers = {{"host", host}};
  return "http://" + host + s.path + "?" + signer.PresignQuery(s, std::time(nullptr), expires);
}

// curl arguments for a GET of `path` with `query` (decoded pairs) on
// `agent`, signed in the Authorization header with `token` as both keys.
std::vector<std::string> SignedGet(const TestCluster& c, int agent, const std::string& token,
                                   const std::string& path,
                                   std::vector<std::pair<std::string, std::string>> query) {
  const std::string host = "127.0.0.1:" + std::to_string(c.agents[size_t(agent)]->http_port());
  shoal::SigV4Signer signer({token, token, ""}, "us-east-1");
  shoal::SignableRequest s;
  s.method = "GET";
  s.path = path;
  s.query = query;
  s.headers = {{"host", host}};
  s.payload_sha256 = shoal::kEmptyPayloadSha256;
  std::vector<std::string> args;
  for (const auto& [k, v] : signer.SignHeaders(s, std::time(nullptr))) {
    args.push_back("-H");
    args.push_back(k + ": " + v);
  }
  args.push_back("http://" + host + path +
                 (query.empty() ? "" : "?" + shoal::CanonicalQueryString(query)));
  return args;
}

struct OneModel : TestCluster {
  std::string ckpt = tmp / "ckpt";
  OneModel() {
    AddAgent({"--origin", "file://" + origin});
    WriteRandomFile(ckpt + "/config.json", 900, 3);
    WriteRandomFile(ckpt + "/model.bin", 3 * 1048576 + 17, 4);
    PublishOk(ckpt, "team-a/m", 0);
  }
};

}  // namespace

TEST_CASE("a presigned URL may live at most 7 days, and longer ones are refused as S3 does",
          "[agent][read][s3]") {
  OneModel c;
  CurlAnswer week = c.Curl({Presigned(c, 0, c.reader, "m/latest/config.json", 604800)});
  CHECK(week.status == 200);
  CHECK(week.body == Slurp(c.ckpt + "/config.json"));

  for (uint32_t expires : {604801u, 999999u}) {
    INFO("X-Amz-Expires=" << expires);
    CurlAnswer a = c.Curl({Presigned(c, 0, c.reader, "m/latest/config.json", expires)});
    CHECK(a.status == 400);
    CHECK(a.body.find("<Code>AuthorizationQueryParametersError</Code>") != std::string::npos);
    CHECK(a.body.find("X-Amz-Expires &apos;" + std::to_string(expires) + "&apos;") !=
          std::string::npos);
    CHECK(a.body.find("604800") != std::string::npos);
    CHECK(a.body.find("<RequestId>") != std::string::npos);
  }
}

TEST_CASE("numbers in an S3 query must be plain digits in range, each with one clear error",
          "[agent][read][s3]") {
  OneModel c;
  // Anonymous reads are off, so each request is signed with the read token.
  auto get = [&](const std::string& key, std::vector<std::pair<std::string, std::string>> query) {
    return c.Curl(SignedGet(c, 0, c.reader, "/team-a/" + key, std::move(query)));
  };
  CurlAnswer listed = get("", {{"list-type", "2"}, {"max-keys", "1"}, {"prefix", "m/latest/"}});
  CHECK(listed.status == 200);
  CHECK(listed.body.find("<MaxKeys>1</MaxKeys>") != std::string::npos);

  for (const char* bad : {"+1", " 1", "1x", "0x1", "-1", "99999999999999999999999"}) {
    INFO("max-keys=" << bad);
    CurlAnswer a = get("", {{"list-type", "2"}, {"prefix", "m/latest/"}, {"max-keys", bad}});
    CHECK(a.status == 400);
    CHECK(a.body.find("<Code>InvalidArgument</Code>") != std::string::npos);
    CHECK(a.body.find("max-keys &apos;") != std::string::npos);
  }

  // Every object here is one part: part 1 is the object, others do not exist.
  CurlAnswer part1 = get("m/latest/config.json", {{"partNumber", "1"}});
  CHECK(part1.status == 200);
  CHECK(part1.body == Slurp(c.ckpt + "/config.json"));
  CurlAnswer part2 = get("m/latest/config.json", {{"partNumber", "2"}});
  CHECK(part2.status == 416);
  CHECK(part2.body.find("<Code>InvalidPartNumber</Code>") != std::string::npos);
  for (const char* bad : {"abc", "0", "+1", "1.0", "10001"}) {
    INFO("partNumber=" << bad);
    CurlAnswer a = get("m/latest/config.json", {{"partNumber", bad}});
    CHECK(a.status == 400);
    CHECK(a.body.find("partNumber &apos;") != std::string::npos);
  }

  // A Range with a number that is not plain digits is ignored, as RFC 9110
  // allows: the whole file, never a different range.
  for (const char* bad : {"bytes=+1-5", "bytes=0x1-5", "bytes=1-5x"}) {
    INFO(bad);
    CurlAnswer a = c.Curl({"-H", std::string("Range: ") + bad, "-H",
                           "Authorization: Bearer " + c.reader, c.FileUrl(0, "m", "config.json")});
    CHECK(a.status == 200);
    CHECK(a.body.size() == 900);
  }
}
