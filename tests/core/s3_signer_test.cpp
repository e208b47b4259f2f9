// Known-answer tests for SigV4. The inputs and expected signatures are the
// worked examples AWS publishes in the Amazon S3 API Reference, "Signature
// Calculations for the Authorization Header: Transferring Payload in a Single
// Chunk (AWS Signature Version 4)" (sig-v4-header-based-auth) and
// "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)"
// (sigv4-query-string-auth): bucket examplebucket, access key
// AKIAIOSFODNN7EXAMPLE, date 20130524T000000Z, region us-east-1.
#include "shoal/s3_signer.h"

#include <catch2/catch.hpp>

#include "shoal/sha256.h"

using namespace shoal;

namespace {

const std::time_t k20130524 = 1369353600;  // 2013-05-24T00:00:00Z

SigV4Signer ExampleSigner() {
  return SigV4Signer({"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""},
                     "us-east-1");
}

std::string AuthorizationOf(const SigV4Signer& signer, const SignableRequest& req) {
  for (const auto& [k, v] : signer.SignHeaders(req, k20130524)) {
    if (k == "authorization") return v;
  }
  return "";
}

}  // namespace

TEST_CASE("SigV4 signs AWS's GET Object example", "[s3][sigv4]") {
  SignableRequest req;
  req.method = "GET";
  req.path = "/test.txt";
  req.headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}};
  req.payload_sha256 = kEmptyPayloadSha256;
  CHECK(AuthorizationOf(ExampleSigner(), req) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("SigV4 signs AWS's PUT Object example with its payload hash", "[s3][sigv4]") {
  const std::string body = "Welcome to Amazon S3.";
  SignableRequest req;
  req.method = "PUT";
  req.path = "/test%24file.text";
  req.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                 {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                 {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
  req.payload_sha256 = Sha256::Of(body.data(), body.size()).ToHex();
  REQUIRE(req.payload_sha256 == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  CHECK(AuthorizationOf(ExampleSigner(), req) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
        "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST_CASE("SigV4 signs AWS's GET Bucket Lifecycle example (empty query value)", "[s3][sigv4]") {
  SignableRequest req;
  req.method = "GET";
  req.path = "/";
  req.query = {{"lifecycle", ""}};
  req.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
  req.payload_sha256 = kEmptyPayloadSha256;
  std::string auth = AuthorizationOf(ExampleSigner(), req);
  CHECK(SigV4Signer::CanonicalRequest(req).find("\nlifecycle=\n") != std::string::npos);
  CHECK(auth.substr(auth.size() - 64) ==
        "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST_CASE("SigV4 signs AWS's List Objects example with a sorted query", "[s3][sigv4]") {
  SignableRequest req;
  req.method = "GET";
  req.path = "/";
  req.query = {{"prefix", "J"}, {"max-keys", "2"}};  // given unsorted on purpose
  req.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
  req.payload_sha256 = kEmptyPayloadSha256;
  std::string canonical = SigV4Signer::CanonicalRequest(req);
  CHECK(canonical.find("\nmax-keys=2&prefix=J\n") != std::string::npos);
  std::string auth = AuthorizationOf(ExampleSigner(), req);
  CHECK(auth.substr(auth.size() - 64) ==
        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST_CASE("SigV4 presigns AWS's query-string example", "[s3][sigv4]") {
  SignableRequest req;
  req.method = "GET";
  req.path = "/test.txt";
  req.headers = {{"host", "examplebucket.s3.amazonaws.com"}};
  std::string q = ExampleSigner().PresignQuery(req, k20130524, 86400);
  CHECK(q ==
        "X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

TEST_CASE("SigV4 adds the session token and signs it", "[s3][sigv4]") {
  SigV4Signer signer({"AKID", "secret", "TOKEN/with+chars"}, "eu-west-1");
  SignableRequest req{"GET", "/b/k", {}, {{"host", "h"}}, kEmptyPayloadSha256};
  auto headers = signer.SignHeaders(req, k20130524);
  bool has_token = false;
  std::string auth;
  for (const auto& [k, v] : headers) {
    if (k == "x-amz-security-token") has_token = v == "TOKEN/with+chars";
    if (k == "authorization") auth = v;
  }
  CHECK(has_token);
  CHECK(auth.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token") !=
        std::string::npos);
  CHECK(auth.find("/20130524/eu-west-1/s3/aws4_request") != std::string::npos);
}

TEST_CASE("SigV4 canonical headers are trimmed and lower-cased", "[s3][sigv4]") {
  SignableRequest req{
      "GET", "/", {}, {{"Host", "h"}, {"X-Amz-Meta-A", "  a   b  "}}, kEmptyPayloadSha256};
  std::string c = SigV4Signer::CanonicalRequest(req);
  CHECK(c == "GET\n/\n\nhost:h\nx-amz-meta-a:a b\n\nhost;x-amz-meta-a\n" +
                 std::string(kEmptyPayloadSha256));
}
