#include "shoal/origin_options.h"

namespace shoal {

Status OriginOptions::Validate() const {
  const bool is_file = url.rfind("file://", 0) == 0;
  const bool is_s3 = url.rfind("s3://", 0) == 0;
  if (!is_file && !is_s3) {
    return Status::InvalidArgument("origin URL '" + url +
                                   "' must start with file:// or s3:// (e.g. s3://bucket/prefix)");
  }
  if (is_file && url.size() <= 7) {
    return Status::InvalidArgument("origin URL '" + url + "' names no folder");
  }
  if (is_s3 && (url.size() <= 5 || url[5] == '/')) {
    return Status::InvalidArgument("origin URL '" + url + "' names no bucket");
  }
  if (!endpoint.empty() && endpoint.rfind("http://", 0) != 0 &&
      endpoint.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("S3 endpoint '" + endpoint +
                                   "' must start with http:// or https://");
  }
  if (access_key.empty() != secret_key.empty()) {
    return Status::InvalidArgument("give both an S3 access key and a secret key, or neither");
  }
  if (connect_timeout_ms == 0 || io_timeout_ms == 0) {
    return Status::InvalidArgument("origin timeouts must be positive");
  }
  if (max_attempts == 0 || max_attempts > 20) {
    return Status::InvalidArgument("origin max_attempts must be between 1 and 20");
  }
  if (backoff_base_ms > backoff_max_ms) {
    return Status::InvalidArgument("origin backoff_base_ms must not exceed backoff_max_ms");
  }
  if (part_size < (5ull << 20) || part_size > (5ull << 30)) {
    return Status::InvalidArgument("S3 part_size must be between 5 MiB and 5 GiB");
  }
  if (multipart_threshold < part_size) {
    return Status::InvalidArgument("S3 multipart_threshold must be at least part_size");
  }
  if (upload_parallelism == 0 || upload_parallelism > 64) {
    return Status::InvalidArgument("S3 upload_parallelism must be between 1 and 64");
  }
  return Status::OK();
}

}  // namespace shoal
