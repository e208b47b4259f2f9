// S3Error: turns S3's error answers into one-line Status messages that say
// what failed and what to do.
#ifndef SHOAL_CORE_S3_ERROR_H_
#define SHOAL_CORE_S3_ERROR_H_

#include <string>

#include "shoal/status.h"

namespace shoal {

struct S3ErrorBody {
  std::string code;     // e.g. "NoSuchKey"; empty if the body had none (HEAD)
  std::string message;  // S3's own words, if any
};

// Reads <Error><Code/><Message/></Error>; an unparsable body gives empty fields.
S3ErrorBody ParseS3Error(const std::string& body);

struct S3ErrorContext {
  std::string operation;  // "GET", "PUT", ...
  std::string object;     // "s3://bucket/key"
  std::string bucket;
  std::string endpoint;  // "http://127.0.0.1:7480"
  std::string access_key;
};

// NotFound for 404 (NoSuchKey, NoSuchBucket, NoSuchUpload), PermissionDenied
// for 403 (SignatureDoesNotMatch, InvalidAccessKeyId, AccessDenied),
// InvalidArgument for 416 and other 4xx, Unavailable for 5xx.
Status S3ErrorToStatus(int http_status, const S3ErrorBody& error, const S3ErrorContext& ctx);

}  // namespace shoal

#endif  // SHOAL_CORE_S3_ERROR_H_
