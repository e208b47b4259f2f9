// The S3 request target as the agent's S3 routes read it (agent/read/
// s3_routes.cpp): ParseTarget splits and decodes path and query, then
// ParseS3Path, ParseS3Key (or the plain API's ParsePlainPath), ValidateRef,
// partNumber and max-keys through ParseDecimalParam, ParseS3Target with the
// path's first segment as a virtual host, and ListObjects' paging with
// prefix, delimiter, start-after and continuation-token (v2) or marker and
// NextMarker (v1) over a fixed listing. Keys also go through the percent-encoding S3 clients use
// and back (shoal/uri_encode.h).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "read/decimal_param.h"
#include "read/object_address.h"
#include "read/object_listing.h"
#include "server/http_wire.h"
#include "shoal/manifest.h"
#include "shoal/uri_encode.h"

namespace {

using shoal::fuzz::Check;

std::string Get(const std::map<std::string, std::string>& q, const char* name) {
  auto it = q.find(name);
  return it == q.end() ? std::string() : it->second;
}

// An address that parses names no path the chunk store or a caller's
// folder could be escaped with.
void CheckAddress(const shoal::ObjectAddress& a) {
  Check(shoal::ValidateName("namespace", a.ns).ok(), "an address with a bad namespace");
  Check(shoal::ValidateName("model name", a.name).ok(), "an address with a bad name");
  Check(shoal::ValidateRef(a.ref).ok(), "an address with a bad ref");
  if (!a.manifest) Check(shoal::ValidateRelativePath(a.path).ok(), "an address with a bad path");
}

// Keys as a version's listing has them, sorted.
const std::vector<shoal::ObjectEntry>& Listing() {
  static const std::vector<shoal::ObjectEntry> entries = [] {
    std::vector<shoal::ObjectEntry> e;
    for (const char* k : {"m/v1/a", "m/v1/b/c", "m/v1/b/d", "m/v1/b/e/f", "m/v1/c%2F", "m/v1/d",
                          "m/v2/a", "n/latest/x y", "n/latest/z"}) {
      e.push_back(shoal::ObjectEntry{k, 1, "\"e\"", "2026-01-02T03:04:05.000Z"});
    }
    return e;
  }();
  return entries;
}

void List(const std::map<std::string, std::string>& q) {
  auto max = q.find("max-keys");
  shoal::Result<int> max_keys = shoal::ParseMaxKeys(max == q.end() ? nullptr : &max->second);
  if (!max_keys.ok()) return;
  Check(*max_keys >= 0 && *max_keys <= 1000, "max-keys out of range");
  shoal::ObjectListRequest lr;
  lr.prefix = Get(q, "prefix");
  lr.delimiter = Get(q, "delimiter");
  const bool v1 = Get(q, "list-type") != "2";
  lr.start_after = Get(q, v1 ? "marker" : "start-after");
  if (!v1) lr.continuation = Get(q, "continuation-token");
  lr.max_keys = *max_keys;
  // Follows the pages to the end, as a client would.
  for (int pages = 0; pages < 20; ++pages) {
    shoal::Result<shoal::ObjectPage> page = shoal::ListObjects(Listing(), lr);
    if (!page.ok()) return;
    Check(page->key_count() <= lr.max_keys, "a page with more than max-keys keys");
    if (!page->truncated) return;
    Check(!page->next_continuation.empty(), "a truncated page without a continuation token");
    Check(!page->next_marker.empty(), "a truncated page without a next marker");
    if (v1) {
      lr.start_after = page->next_marker;
    } else {
      lr.continuation = page->next_continuation;
    }
  }
  Check(false, "a listing of nine keys that does not end within twenty pages");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view target(reinterpret_cast<const char*>(data), size);
  shoal::HttpRequest req;
  if (!shoal::ParseTarget(target, &req)) return 0;

  shoal::Result<shoal::ObjectAddress> plain = shoal::ParsePlainPath(req.path);
  if (plain.ok()) CheckAddress(*plain);
  shoal::Result<shoal::S3Path> s3 = shoal::ParseS3Path(req.path);
  if (s3.ok() && !s3->key.empty()) {
    shoal::Result<shoal::ObjectAddress> a = shoal::ParseS3Key(s3->bucket, s3->key);
    if (a.ok() && shoal::ValidateName("bucket", s3->bucket).ok()) CheckAddress(*a);
    shoal::Result<std::string> back = shoal::UriDecode(shoal::UriEncodePath(s3->key));
    Check(back.ok() && *back == s3->key, "a key does not survive UriEncodePath and UriDecode");
  }
  if (s3.ok()) {
    // The same request as if its bucket had been the host's first label.
    const std::string host = s3->bucket + ".localhost:7402";
    shoal::Result<shoal::S3Path> v = shoal::ParseS3Target(host, req.path, {"localhost"});
    Check(v.ok(), "a path-style path that is no virtual-host path");
    // A host whose first label is no bucket name is read path-style (the
    // routes then refuse the path's bucket); one that is names the bucket.
    const std::string named = shoal::VirtualHostBucket(host, {"localhost"});
    if (!named.empty()) {
      Check(shoal::ValidateName("bucket", named).ok(), "a virtual host with a bad bucket");
      Check(v->bucket == named, "a virtual-host request with another bucket than its host's");
      Check(v->key == req.path.substr(1), "a virtual-host key that is not the path");
    }
  }
  for (const auto& [k, v] : req.query) {
    std::optional<std::string> back = shoal::PercentDecode(shoal::UriEncodeQuery(v), true, true);
    Check(back && *back == v, "a query value does not survive UriEncodeQuery and PercentDecode");
  }
  if (req.query.count("partNumber")) {
    (void)shoal::ParseDecimalParam("partNumber", req.query["partNumber"], 1, 10000);
  }
  List(req.query);
  return 0;
}
