// SigV4 checks against requests signed by the project's own signer (which
// radosgw accepts), and AWS's published example.
#include "read/sigv4_verifier.h"

#include <catch2/catch.hpp>

#include "shoal/s3_signer.h"
#include "shoal/uri_encode.h"

using namespace shoal;
using Outcome = SigV4Check::Outcome;

namespace {

const std::time_t kNow = 1769904000;  // 2026-02-01T00:00:00Z

std::string Same(const std::string& key) { return key; }

// A GET as an S3 SDK sends it, signed with `secret`.
HttpRequest Signed(const std::string& key, const std::string& secret, const std::string& path,
                   std::vector<std::pair<std::string, std::string>> query, std::time_t when) {
  SigV4Signer signer({key, secret, ""}, "us-east-1");
  SignableRequest s;
  s.method = "GET";
  s.path = UriEncodePath(path);
  s.query = query;
  s.headers = {{"host", "127.0.0.1:7402"}, {"range", "bytes=0-9"}};
  s.payload_sha256 = kEmptyPayloadSha256;
  HttpRequest r;
  r.method = "GET";
  r.path = path;
  r.target = s.path + (query.empty() ? "" : "?" + CanonicalQueryString(query));
  for (auto& [k, v] : s.headers) r.headers.Add(k, v);
  for (auto& [k, v] : signer.SignHeaders(s, when)) r.headers.Add(k, v);
  return r;
}

}  // namespace

TEST_CASE("a request signed with the token as secret verifies and names the token",
          "[read][sigv4]") {
  HttpRequest r = Signed("shoal1.claims.mac", "shoal1.claims.mac", "/team-a/llama/latest/a b+c.bin",
                         {{"x-id", "GetObject"}}, kNow);
  SigV4Check c = VerifySigV4(r, Same, kNow + 5);
  INFO(c.message);
  CHECK(c.outcome == Outcome::kValid);
  CHECK(c.access_key == "shoal1.claims.mac");
}

TEST_CASE("a wrong secret, a changed header or a changed path is a mismatch", "[read][sigv4]") {
  HttpRequest wrong = Signed("tok", "not-the-token", "/b/k", {}, kNow);
  CHECK(VerifySigV4(wrong, Same, kNow).outcome == Outcome::kMismatch);

  HttpRequest r = Signed("tok", "tok", "/b/k", {{"list-type", "2"}}, kNow);
  CHECK(VerifySigV4(r, Same, kNow).outcome == Outcome::kValid);
  HttpRequest ranged = r;
  ranged.headers.Set("range", "bytes=0-99");
  CHECK(VerifySigV4(ranged, Same, kNow).outcome == Outcome::kMismatch);
  HttpRequest moved = r;
  moved.path = "/b/other";
  CHECK(VerifySigV4(moved, Same, kNow).outcome == Outcome::kMismatch);
  HttpRequest requery = r;
  requery.target = "/b/k?list-type=1";
  CHECK(VerifySigV4(requery, Same, kNow).outcome == Outcome::kMismatch);
}

TEST_CASE("unsigned, malformed and stale requests are told apart", "[read][sigv4]") {
  HttpRequest none;
  none.method = "GET";
  none.path = none.target = "/b/k";
  CHECK(VerifySigV4(none, Same, kNow).outcome == Outcome::kAnonymous);

  HttpRequest bad = none;
  bad.headers.Add("Authorization", "AWS4-HMAC-SHA256 Credential=x, Signature=y");
  CHECK(VerifySigV4(bad, Same, kNow).outcome == Outcome::kMalformed);
  HttpRequest v2 = none;
  v2.headers.Add("Authorization", "AWS AKID:signature");
  CHECK(VerifySigV4(v2, Same, kNow).outcome == Outcome::kMalformed);

  HttpRequest old = Signed("tok", "tok", "/b/k", {}, kNow - 3600);
  CHECK(VerifySigV4(old, Same, kNow).outcome == Outcome::kExpired);
}

TEST_CASE("presigned URLs verify until they expire", "[read][sigv4]") {
  SigV4Signer signer({"tok", "tok", ""}, "us-east-1");
  SignableRequest s;
  s.method = "GET";
  s.path = "/b/m/t/f.bin";
  s.headers = {{"host", "127.0.0.1:7402"}};
  std::string query = signer.PresignQuery(s, kNow, 300);
  HttpRequest r;
  r.method = "GET";
  r.path = "/b/m/t/f.bin";
  r.target = r.path + "?" + query;
  r.headers.Add("Host", "127.0.0.1:7402");
  CHECK(VerifySigV4(r, Same, kNow + 10).outcome == Outcome::kValid);
  CHECK(VerifySigV4(r, Same, kNow + 301).outcome == Outcome::kExpired);
  HttpRequest tampered = r;
  tampered.path = "/b/m/t/g.bin";
  CHECK(VerifySigV4(tampered, Same, kNow + 10).outcome == Outcome::kMismatch);
}

TEST_CASE("a presigned URL may live at most 7 days, as on S3", "[read][sigv4]") {
  SigV4Signer signer({"tok", "tok", ""}, "us-east-1");
  SignableRequest s;
  s.method = "GET";
  s.path = "/b/m/t/f.bin";
  s.headers = {{"host", "127.0.0.1:7402"}};
  auto presigned = [&](uint32_t expires) {
    HttpRequest r;
    r.method = "GET";
    r.path = s.path;
    r.target = r.path + "?" + signer.PresignQuery(s, kNow, expires);
    r.headers.Add("Host", "127.0.0.1:7402");
    return r;
  };
  CHECK(VerifySigV4(presigned(604800), Same, kNow + 10).outcome == Outcome::kValid);
  for (uint32_t too_long : {604801u, 999999u}) {
    SigV4Check c = VerifySigV4(presigned(too_long), Same, kNow + 10);
    CHECK(c.outcome == Outcome::kBadQuery);
    CHECK(c.message.find("X-Amz-Expires '" + std::to_string(too_long) + "'") != std::string::npos);
    CHECK(c.message.find("7 days") != std::string::npos);
  }
}

TEST_CASE("a presigned URL's X-Amz-Expires must be plain digits", "[read][sigv4]") {
  SigV4Signer signer({"tok", "tok", ""}, "us-east-1");
  SignableRequest s;
  s.method = "GET";
  s.path = "/b/m/t/f.bin";
  s.headers = {{"host", "127.0.0.1:7402"}};
  const std::string good = signer.PresignQuery(s, kNow, 300);
  // The signature no longer matters: the number is refused before it is checked.
  for (const char* bad : {"%2B300", "%20300", "-1", "0", "300abc", "0x12c", "3e2", ""}) {
    INFO(bad);
    std::string query = good;
    size_t at = query.find("X-Amz-Expires=300");
    REQUIRE(at != std::string::npos);
    query.replace(at, 17, std::string("X-Amz-Expires=") + bad);
    HttpRequest r;
    r.method = "GET";
    r.path = s.path;
    r.target = r.path + "?" + query;
    r.headers.Add("Host", "127.0.0.1:7402");
    SigV4Check c = VerifySigV4(r, Same, kNow + 10);
    CHECK(c.outcome == Outcome::kBadQuery);
    CHECK(c.message.find("X-Amz-Expires") != std::string::npos);
  }
}

TEST_CASE("AWS's published GET example verifies", "[read][sigv4]") {
  // docs.aws.amazon.com, "Signature Calculations for the Authorization
  // Header", example GET Object with a range.
  HttpRequest r;
  r.method = "GET";
  r.path = r.target = "/test.txt";
  r.headers.Add("Host", "examplebucket.s3.amazonaws.com");
  r.headers.Add("Range", "bytes=0-9");
  r.headers.Add("x-amz-content-sha256", kEmptyPayloadSha256);
  r.headers.Add("x-amz-date", "20130524T000000Z");
  r.headers.Add(
      "Authorization",
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
      "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
      "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  auto secret = [](const std::string&) {
    return std::string("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
  };
  SigV4Check c = VerifySigV4(r, secret, ParseAmzDate("20130524T000000Z"));
  INFO(c.message);
  CHECK(c.outcome == Outcome::kValid);
  CHECK(c.access_key == "AKIAIOSFODNN7EXAMPLE");
}
