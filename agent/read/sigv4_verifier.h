// Checks AWS Signature Version 4 on an incoming S3 request, in the
// Authorization header or in a presigned URL's query, by computing the
// signature again with SigV4Signer's own canonical request, string to sign
// and signing key.
//
// The agent's S3 endpoint uses a Shoal read token as the access key ID and
// the same token as the secret key; `secret_for` says which secret an
// access key has, so the rule lives with the caller.
#ifndef SHOAL_AGENT_READ_SIGV4_VERIFIER_H_
#define SHOAL_AGENT_READ_SIGV4_VERIFIER_H_

#include <ctime>
#include <functional>
#include <string>

#include "shoal/server/http_message.h"

namespace shoal {

struct SigV4Check {
  enum class Outcome {
    kAnonymous,  // the request carries no signature at all
    kValid,      // signed by access_key with its secret
    kMalformed,  // an Authorization header that cannot be read
    kBadQuery,   // a presigned URL's X-Amz-* parameters cannot be read or ask too much
    kMismatch,   // well formed, but the signature is wrong
    kExpired,    // the date is more than 15 minutes off, or a presigned URL expired
  };
  Outcome outcome = Outcome::kAnonymous;
  std::string access_key;  // for kValid (and kMismatch: who it claims to be)
  std::string message;     // why, for the failures
};

// Requests may be dated at most this far from `now`, either way.
constexpr int kMaxClockSkewSeconds = 15 * 60;
// A presigned URL may live at most this long (X-Amz-Expires), as on S3.
constexpr int kMaxPresignedSeconds = 7 * 24 * 3600;

SigV4Check VerifySigV4(const HttpRequest& request,
                       const std::function<std::string(const std::string& access_key)>& secret_for,
                       std::time_t now);

// Parses "20130524T000000Z"; -1 if malformed.
std::time_t ParseAmzDate(const std::string& text);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_SIGV4_VERIFIER_H_
