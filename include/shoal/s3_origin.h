// S3Origin: an Origin on any S3-compatible store (AWS S3, Ceph RGW, MinIO).
//
// Written on Boost.Beast and OpenSSL, kept out of this header. Requests are
// signed with SigV4 over their payload hash, ride a keep-alive connection
// pool, and idempotent ones are retried with bounded, jittered exponential
// backoff. Objects larger than OriginOptions::multipart_threshold go up as
// parallel multipart uploads, aborted on failure.
#ifndef SHOAL_S3_ORIGIN_H_
#define SHOAL_S3_ORIGIN_H_

#include <cstdint>
#include <memory>
#include <string>

#include "shoal/origin.h"

namespace shoal {

class S3Origin : public Origin {
 public:
  // A URL that lets anyone holding it GET `key` for `expires_seconds`
  // (1 s to 7 days), signed with this origin's credentials.
  virtual Result<std::string> PresignGet(const std::string& key, uint32_t expires_seconds) = 0;
};

// REQUIRES: options.url starts with "s3://".
Result<std::unique_ptr<S3Origin>> NewS3Origin(const OriginOptions& options);

}  // namespace shoal

#endif  // SHOAL_S3_ORIGIN_H_
