// SigV4Signer: AWS Signature Version 4 for S3 requests, in headers or in a
// presigned URL's query.
//
// The signer only computes strings; it sends nothing. Callers give it the
// already-encoded path, the raw query parameters and the headers they will
// send, and copy the returned headers into the request.
//
// Thread-safety: a signer is immutable after construction; any number of
// threads may sign with it at once.
#ifndef SHOAL_S3_SIGNER_H_
#define SHOAL_S3_SIGNER_H_

#include <cstdint>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace shoal {

struct S3Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty unless temporary credentials
};

// The hex SHA-256 of the empty payload, and the marker for an unsigned one.
extern const char kEmptyPayloadSha256[];
extern const char kUnsignedPayload[];

struct SignableRequest {
  std::string method;  // "GET", "PUT", ...
  std::string path;    // URI-encoded path, e.g. "/bucket/a%20b"; S3 paths are not normalized
  std::vector<std::pair<std::string, std::string>> query;    // raw (not encoded) names and values
  std::vector<std::pair<std::string, std::string>> headers;  // must include "host"
  std::string payload_sha256;  // hex digest of the body, or kUnsignedPayload
};

class SigV4Signer {
 public:
  SigV4Signer(S3Credentials credentials, std::string region, std::string service = "s3");

  // Headers to add for header-based auth at time `now`: x-amz-date,
  // x-amz-content-sha256, x-amz-security-token (if any) and Authorization.
  // Every header in `request` is signed.
  std::vector<std::pair<std::string, std::string>> SignHeaders(const SignableRequest& request,
                                                               std::time_t now) const;

  // The full query string (encoded, sorted, with X-Amz-Signature last) of a
  // presigned URL for `request`, valid `expires_seconds` from `now`. Only the
  // host header is signed, and the payload is UNSIGNED-PAYLOAD.
  std::string PresignQuery(const SignableRequest& request, std::time_t now,
                           uint32_t expires_seconds) const;

  // The pieces, exposed for known-answer tests.
  static std::string CanonicalRequest(const SignableRequest& request);
  std::string StringToSign(const std::string& canonical_request, std::time_t now) const;
  std::string Signature(const std::string& string_to_sign, std::time_t now) const;

  const S3Credentials& credentials() const { return credentials_; }

 private:
  std::string Scope(std::time_t now) const;

  S3Credentials credentials_;
  std::string region_;
  std::string service_;
};

// The encoded, sorted query string SigV4 signs: "a=1&b=x%2Fy". Send the
// same string on the wire.
std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query);

// "20130524T000000Z" for `t` in UTC.
std::string AmzDate(std::time_t t);

}  // namespace shoal

#endif  // SHOAL_S3_SIGNER_H_
