// ObjectAddress: which model, version and file a read names, parsed from
// the agent's plain paths or from an S3 bucket and key.
//
//   /v1/models/{ns}/{name}:{ref}/files/{path}     a file
//   /v1/models/{ns}/{name}:{ref}/manifest         the version's manifest
//   /{bucket}/{key}, key = {name}/{ref}/{path}    S3, path-style; bucket = ns
//   Host {bucket}.{suffix}, /{key}                S3, virtual-host-style
//
// {ref} is a tag or a version ID (or a prefix of 8 or more hex digits).
// Every part is validated here, so nothing later sees a path with '..', a
// NUL or an empty component.
#ifndef SHOAL_AGENT_READ_OBJECT_ADDRESS_H_
#define SHOAL_AGENT_READ_OBJECT_ADDRESS_H_

#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct ObjectAddress {
  std::string ns, name, ref;
  std::string path;       // the file inside the version; empty for the manifest
  bool manifest = false;  // the plain API's /manifest
};

// The plain API's path (percent-decoded, without the query).
// InvalidArgument naming the bad part.
Result<ObjectAddress> ParsePlainPath(std::string_view path);

// An S3 request path split into bucket and key; the key may be empty (a
// bucket request). InvalidArgument for an empty path or bucket.
struct S3Path {
  std::string bucket;
  std::string key;
};
Result<S3Path> ParseS3Path(std::string_view path);

// The bucket a virtual-host-style Host header names, or "" for a
// path-style request. The host (port dropped, case folded) must be
// "{bucket}.{suffix}" with {bucket} a valid namespace name and {suffix} one
// of `suffixes` or a name whose first label is "s3" (as in
// bucket.s3.region.amazonaws.com, or team-a.s3.localhost). IP addresses
// and hosts such as "localhost", "agent.svc.local" or "s3.example" are
// path-style.
std::string VirtualHostBucket(std::string_view host, const std::vector<std::string>& suffixes);

// Bucket and key of an S3 request, path-style or virtual-host-style (see
// VirtualHostBucket; the whole path is then the key). An empty bucket is a
// request to the service itself (path "/" on a path-style host: ListBuckets).
// InvalidArgument for a path that does not start with '/'.
Result<S3Path> ParseS3Target(std::string_view host, std::string_view path,
                             const std::vector<std::string>& suffixes);

// The file an S3 key names in bucket (namespace) `ns`: NotFound for a key
// that names no file ("name/ref/" or shorter); InvalidArgument for a bad
// name, ref or path (such as '..').
Result<ObjectAddress> ParseS3Key(const std::string& ns, std::string_view key);

// Tags and version IDs: 1 to 128 of [A-Za-z0-9._-].
Status ValidateRef(const std::string& ref);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_OBJECT_ADDRESS_H_
