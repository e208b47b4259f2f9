#include "read/s3_xml.h"

#include "shoal/uri_encode.h"

namespace shoal {
namespace {

constexpr char kProlog[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
constexpr char kNamespace[] = " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";

void Element(std::string* out, std::string_view name, std::string_view text) {
  *out += '<';
  *out += name;
  *out += '>';
  *out += XmlEscape(text);
  *out += "</";
  *out += name;
  *out += '>';
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string S3ErrorXml(std::string_view code, std::string_view message, std::string_view resource,
                       std::string_view request_id) {
  std::string out = kProlog;
  out += "<Error>";
  Element(&out, "Code", code);
  Element(&out, "Message", message);
  Element(&out, "Resource", resource);
  Element(&out, "RequestId", request_id);
  out += "</Error>\n";
  return out;
}

std::string ListBucketResultXml(const std::string& bucket, const ObjectListRequest& request,
                                const ObjectPage& page, bool url_encoding, ListVersion version) {
  auto enc = [url_encoding](const std::string& s) { return url_encoding ? UriEncodePath(s) : s; };
  const bool v1 = version == ListVersion::kV1;
  std::string out = kProlog;
  out += "<ListBucketResult";
  out += kNamespace;
  out += '>';
  Element(&out, "Name", bucket);
  Element(&out, "Prefix", enc(request.prefix));
  if (v1) {
    Element(&out, "Marker", enc(request.start_after));
    if (page.truncated && !request.delimiter.empty())
      Element(&out, "NextMarker", enc(page.next_marker));
  }
  if (!request.delimiter.empty()) Element(&out, "Delimiter", enc(request.delimiter));
  Element(&out, "MaxKeys", std::to_string(request.max_keys));
  if (!v1) Element(&out, "KeyCount", std::to_string(page.key_count()));
  Element(&out, "IsTruncated", page.truncated ? "true" : "false");
  if (!v1) {
    if (!request.continuation.empty()) Element(&out, "ContinuationToken", request.continuation);
    if (page.truncated) Element(&out, "NextContinuationToken", page.next_continuation);
    if (!request.start_after.empty()) Element(&out, "StartAfter", enc(request.start_after));
  }
  if (url_encoding) Element(&out, "EncodingType", "url");
  for (const ObjectEntry* e : page.contents) {
    out += "<Contents>";
    Element(&out, "Key", enc(e->key));
    Element(&out, "LastModified", e->last_modified);
    Element(&out, "ETag", e->etag);
    Element(&out, "Size", std::to_string(e->size));
    Element(&out, "StorageClass", "STANDARD");
    out += "</Contents>";
  }
  for (const std::string& p : page.common_prefixes) {
    out += "<CommonPrefixes>";
    Element(&out, "Prefix", enc(p));
    out += "</CommonPrefixes>";
  }
  out += "</ListBucketResult>\n";
  return out;
}

std::string ListAllMyBucketsXml(const std::string& owner, const std::vector<std::string>& buckets,
                                const std::string& creation_date) {
  std::string out = kProlog;
  out += "<ListAllMyBucketsResult";
  out += kNamespace;
  out += "><Owner>";
  Element(&out, "ID", owner);
  Element(&out, "DisplayName", owner);
  out += "</Owner><Buckets>";
  for (const std::string& b : buckets) {
    out += "<Bucket>";
    Element(&out, "Name", b);
    Element(&out, "CreationDate", creation_date);
    out += "</Bucket>";
  }
  out += "</Buckets></ListAllMyBucketsResult>\n";
  return out;
}

std::string LocationConstraintXml(const std::string& region) {
  std::string out = kProlog;
  out += "<LocationConstraint";
  out += kNamespace;
  out += '>';
  out += XmlEscape(region);
  out += "</LocationConstraint>\n";
  return out;
}

}  // namespace shoal
