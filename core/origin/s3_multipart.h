// Multipart upload: an object sent as parts in parallel, then stitched
// together by S3; on any failure the upload is aborted so no parts linger.
#ifndef SHOAL_CORE_S3_MULTIPART_H_
#define SHOAL_CORE_S3_MULTIPART_H_

#include <cstdint>
#include <string>
#include <vector>

#include "origin/s3_client.h"
#include "shoal/byte_stream.h"

namespace shoal {

struct MultipartPlan {
  uint64_t part_size =
      16ull << 20;           // first parts' size; later ones grow so 10,000 parts reach ~880 GiB
  uint32_t parallelism = 4;  // parts in flight
};

// Uploads `head` (bytes already read from the source) followed by the rest
// of `source` as the object `key` (full key, with any origin prefix).
// REQUIRES: head is non-empty.
Status UploadMultipart(S3Client& client, const std::string& key, std::vector<uint8_t> head,
                       ByteSource& source, const MultipartPlan& plan);

// The CompleteMultipartUpload body for parts 1..n with these ETags.
std::string CompleteMultipartXml(const std::vector<std::string>& etags);

}  // namespace shoal

#endif  // SHOAL_CORE_S3_MULTIPART_H_
