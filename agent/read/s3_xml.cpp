#include "read/s3_xml.h"

#include "shoal/uri_encode.h"

namespace shoal {
namespace {

constexpr char kProlog[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

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
                                const ObjectPage& page, bool url_encoding) {
  auto enc = [url_encoding](const std::string& s) { return url_encoding ? UriEncodePath(s) : s; };
  std::string out = kProlog;
  out += "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  Element(&out, "Name", bucket);
  Element(&out, "Prefix", enc(request.prefix));
  if (!request.delimiter.empty()) Element(&out, "Delimiter", enc(request.delimiter));
  Element(&out, "MaxKeys", std::to_string(request.max_keys));
  Element(&out, "KeyCount", std::to_string(page.key_count()));
  Element(&out, "IsTruncated", page.truncated ? "true" : "false");
  if (!request.continuation.empty()) Element(&out, "ContinuationToken", request.continuation);
  if (page.truncated) Element(&out, "NextContinuationToken", page.next_continuation);
  if (!request.start_after.empty()) Element(&out, "StartAfter", enc(request.start_after));
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

}  // namespace shoal
