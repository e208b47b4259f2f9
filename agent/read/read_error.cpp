#include "read/read_error.h"

namespace shoal {

int HttpStatusOf(ReadFailure f, bool s3) {
  switch (f) {
    case ReadFailure::kBadRequest:
    case ReadFailure::kBadAuthorization:
    case ReadFailure::kBadPresignedQuery:
      return 400;
    case ReadFailure::kNoCredentials:
    case ReadFailure::kBadToken:
      return s3 ? 403 : 401;
    case ReadFailure::kSignatureMismatch:
    case ReadFailure::kRequestExpired:
    case ReadFailure::kAccessDenied:
      return 403;
    case ReadFailure::kNoSuchKey:
    case ReadFailure::kNoSuchBucket:
      return 404;
    case ReadFailure::kInvalidRange:
    case ReadFailure::kInvalidPartNumber:
      return 416;
    case ReadFailure::kPreconditionFailed:
      return 412;
    case ReadFailure::kNotImplemented:
      return 501;
    case ReadFailure::kUnavailable:
      return 503;
    case ReadFailure::kSlowDown:
      return s3 ? 503 : 429;
    case ReadFailure::kInternal:
      return 500;
  }
  return 500;
}

const char* S3CodeOf(ReadFailure f) {
  switch (f) {
    case ReadFailure::kBadRequest:
      return "InvalidArgument";
    case ReadFailure::kBadAuthorization:
      return "AuthorizationHeaderMalformed";
    case ReadFailure::kBadPresignedQuery:
      return "AuthorizationQueryParametersError";
    case ReadFailure::kNoCredentials:
    case ReadFailure::kAccessDenied:
      return "AccessDenied";
    case ReadFailure::kBadToken:
      return "InvalidAccessKeyId";
    case ReadFailure::kSignatureMismatch:
      return "SignatureDoesNotMatch";
    case ReadFailure::kRequestExpired:
      return "RequestTimeTooSkewed";
    case ReadFailure::kNoSuchKey:
      return "NoSuchKey";
    case ReadFailure::kNoSuchBucket:
      return "NoSuchBucket";
    case ReadFailure::kInvalidRange:
      return "InvalidRange";
    case ReadFailure::kInvalidPartNumber:
      return "InvalidPartNumber";
    case ReadFailure::kPreconditionFailed:
      return "PreconditionFailed";
    case ReadFailure::kNotImplemented:
      return "NotImplemented";
    case ReadFailure::kUnavailable:
      return "ServiceUnavailable";
    case ReadFailure::kSlowDown:
      return "SlowDown";
    case ReadFailure::kInternal:
      return "InternalError";
  }
  return "InternalError";
}

ReadError ReadErrorFrom(const Status& s, ReadFailure not_found) {
  switch (s.code()) {
    case Status::Code::kNotFound:
    case Status::Code::kFailedPrecondition:
      return {not_found, s.message()};
    case Status::Code::kUnauthenticated:
      return {ReadFailure::kBadToken, s.message()};
    case Status::Code::kPermissionDenied:
      return {ReadFailure::kAccessDenied, s.message()};
    case Status::Code::kInvalidArgument:
      return {ReadFailure::kBadRequest, s.message()};
    case Status::Code::kUnavailable:
      return {ReadFailure::kUnavailable, s.message()};
    default:
      return {ReadFailure::kInternal, s.ToString()};
  }
}

}  // namespace shoal
