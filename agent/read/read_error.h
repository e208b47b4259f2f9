// ReadError: every way a read can fail, and the one mapping from it to an
// HTTP status, and to S3's error code for the S3 endpoint.
#ifndef SHOAL_AGENT_READ_READ_ERROR_H_
#define SHOAL_AGENT_READ_READ_ERROR_H_

#include <string>
#include <utility>
#include <vector>

#include "shoal/status.h"

namespace shoal {

enum class ReadFailure {
  kBadRequest,          // 400 InvalidArgument: a bad path, key, parameter or '..'
  kBadAuthorization,    // 400 AuthorizationHeaderMalformed
  kBadPresignedQuery,   // 400 AuthorizationQueryParametersError: a presigned URL's X-Amz-* query
  kNoCredentials,       // 401 / S3: 403 AccessDenied: no token at all
  kBadToken,            // 401 / S3: 403 InvalidAccessKeyId: the tracker refused the token
  kSignatureMismatch,   // 403 SignatureDoesNotMatch
  kRequestExpired,      // 403 RequestTimeTooSkewed
  kAccessDenied,        // 403 AccessDenied: the token may not read this namespace
  kNoSuchKey,           // 404 NoSuchKey: no such model, tag, version or file
  kNoSuchBucket,        // 404 NoSuchBucket
  kNotImplemented,      // 501 NotImplemented: an S3 operation this endpoint lacks
  kInvalidRange,        // 416 InvalidRange
  kInvalidPartNumber,   // 416 InvalidPartNumber: objects here have one part
  kPreconditionFailed,  // 412 PreconditionFailed: If-Match or If-Unmodified-Since
  kUnavailable,         // 503 ServiceUnavailable: tracker, peers or origin unreachable
  kSlowDown,            // 429 / S3: 503 SlowDown: the token has too many reads in flight
  kInternal,            // 500 InternalError
};

struct ReadError {
  ReadFailure failure = ReadFailure::kInternal;
  std::string message;  // one line: what failed and what to do
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra response headers
};

// The status for the plain API, or for S3 (`s3`), which answers missing or
// refused credentials with 403 rather than 401, as S3 itself does: no
// credentials 403 AccessDenied, an unknown, expired or revoked key 403
// InvalidAccessKeyId. The plain API answers those 401.
int HttpStatusOf(ReadFailure f, bool s3 = false);
const char* S3CodeOf(ReadFailure f);

// A Status from resolving a model with the caller's token, or from reading
// its chunks: NotFound becomes `not_found`, and so does FailedPrecondition (a
// version whose upload failed: nothing to read, and nothing a retry fixes),
// Unauthenticated kBadToken (the tracker refused the token: expired or
// revoked since the connection was made), PermissionDenied kAccessDenied,
// InvalidArgument kBadRequest, Unavailable kUnavailable, others kInternal.
ReadError ReadErrorFrom(const Status& s, ReadFailure not_found = ReadFailure::kNoSuchKey);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_READ_ERROR_H_
