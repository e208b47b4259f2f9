#include "read/object_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "shoal/manifest.h"

namespace shoal {
namespace {

constexpr std::string_view kPlainPrefix = "/v1/models/";

Status ValidateAddress(const ObjectAddress& a) {
  SHOAL_RETURN_IF_ERROR(ValidateName("namespace", a.ns));
  SHOAL_RETURN_IF_ERROR(ValidateName("model name", a.name));
  SHOAL_RETURN_IF_ERROR(ValidateRef(a.ref));
  if (!a.manifest) SHOAL_RETURN_IF_ERROR(ValidateRelativePath(a.path));
  return Status::OK();
}

}  // namespace

Status ValidateRef(const std::string& ref) {
  if (ref.empty() || ref.size() > 128) {
    return Status::InvalidArgument("tag or version '" + ref.substr(0, 130) +
                                   "' must be 1 to 128 bytes");
  }
  for (char c : ref) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return Status::InvalidArgument("tag or version '" + ref +
                                     "' may only hold letters, digits and . _ -");
    }
  }
  return Status::OK();
}

Result<ObjectAddress> ParsePlainPath(std::string_view path) {
  const std::string usage = "; use /v1/models/{ns}/{name}:{tag}/files/{path} or .../manifest";
  if (path.substr(0, kPlainPrefix.size()) != kPlainPrefix) {
    return Status::InvalidArgument("path '" + std::string(path.substr(0, 200)) +
                                   "' is not a model path" + usage);
  }
  std::string_view rest = path.substr(kPlainPrefix.size());
  size_t slash = rest.find('/');
  size_t colon = rest.find(':', slash == std::string_view::npos ? 0 : slash);
  size_t after = colon == std::string_view::npos ? std::string_view::npos : rest.find('/', colon);
  if (slash == std::string_view::npos || colon == std::string_view::npos ||
      after == std::string_view::npos) {
    return Status::InvalidArgument("path '" + std::string(path.substr(0, 200)) +
                                   "' names no model and tag" + usage);
  }
  ObjectAddress a;
  a.ns = std::string(rest.substr(0, slash));
  a.name = std::string(rest.substr(slash + 1, colon - slash - 1));
  a.ref = std::string(rest.substr(colon + 1, after - colon - 1));
  std::string_view tail = rest.substr(after);
  if (tail == "/manifest") {
    a.manifest = true;
  } else if (tail.substr(0, 7) == "/files/") {
    a.path = std::string(tail.substr(7));
  } else {
    return Status::InvalidArgument("path '" + std::string(path.substr(0, 200)) +
                                   "' names neither files nor manifest" + usage);
  }
  SHOAL_RETURN_IF_ERROR(ValidateAddress(a));
  return a;
}

Result<S3Path> ParseS3Path(std::string_view path) {
  if (path.size() < 2 || path[0] != '/') return Status::InvalidArgument("request names no bucket");
  path.remove_prefix(1);
  size_t slash = path.find('/');
  S3Path out;
  out.bucket = std::string(path.substr(0, slash));
  if (slash != std::string_view::npos) out.key = std::string(path.substr(slash + 1));
  if (out.bucket.empty()) return Status::InvalidArgument("request names no bucket");
  return out;
}

std::string VirtualHostBucket(std::string_view host, const std::vector<std::string>& suffixes) {
  std::string h(host);
  if (h.empty() || h.front() == '[') return "";  // an IPv6 literal
  if (size_t colon = h.rfind(':'); colon != std::string::npos) h.resize(colon);
  if (!h.empty() && h.back() == '.') h.pop_back();  // a fully qualified name
  std::transform(h.begin(), h.end(), h.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return "";
  size_t dot = h.find('.');
  if (dot == std::string::npos) return "";
  std::string bucket = h.substr(0, dot), suffix = h.substr(dot + 1);
  bool endpoint = suffix == "s3" || suffix.rfind("s3.", 0) == 0 ||
                  std::find(suffixes.begin(), suffixes.end(), suffix) != suffixes.end();
  if (!endpoint || !ValidateName("bucket", bucket).ok()) return "";
  return bucket;
}

Result<S3Path> ParseS3Target(std::string_view host, std::string_view path,
                             const std::vector<std::string>& suffixes) {
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument("request path '" + std::string(path.substr(0, 200)) +
                                   "' does not start with '/'");
  }
  S3Path out;
  out.bucket = VirtualHostBucket(host, suffixes);
  if (!out.bucket.empty()) {
    out.key = std::string(path.substr(1));
    return out;
  }
  if (path == "/") return out;  // the service: ListBuckets
  return ParseS3Path(path);
}

Result<ObjectAddress> ParseS3Key(const std::string& ns, std::string_view key) {
  size_t first = key.find('/');
  size_t second =
      first == std::string_view::npos ? std::string_view::npos : key.find('/', first + 1);
  if (second == std::string_view::npos || second + 1 == key.size()) {
    return Status::NotFound("key '" + std::string(key.substr(0, 200)) +
                            "' names no file; keys are {model}/{tag}/{path}");
  }
  ObjectAddress a;
  a.ns = ns;
  a.name = std::string(key.substr(0, first));
  a.ref = std::string(key.substr(first + 1, second - first - 1));
  a.path = std::string(key.substr(second + 1));
  SHOAL_RETURN_IF_ERROR(ValidateAddress(a));
  return a;
}

}  // namespace shoal
