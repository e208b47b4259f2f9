#include "origin/s3_list.h"

#include "origin/xml_reader.h"
#include "shoal/decimal.h"
#include "shoal/uri_encode.h"

namespace shoal {

Result<ListPage> ParseListObjectsV2(const std::string& xml, const std::string& strip_prefix) {
  Result<XmlElement> doc = ParseXml(xml);
  if (!doc.ok()) return doc.status();
  if (doc->name != "ListBucketResult") {
    return Status::Corruption("ListObjectsV2 reply has root <" + doc->name + ">");
  }
  const bool url_encoded = doc->ChildText("EncodingType") == "url";
  auto decode = [&](const std::string& s) -> Result<std::string> {
    return url_encoded ? UriDecode(s) : Result<std::string>(s);
  };
  ListPage page;
  for (const XmlElement& c : doc->children) {
    if (c.name != "Contents") continue;
    Result<std::string> key = decode(c.ChildText("Key"));
    if (!key.ok()) return key.status();
    if (key->compare(0, strip_prefix.size(), strip_prefix) != 0) {
      return Status::Corruption("ListObjectsV2 returned key '" + *key + "' outside prefix '" +
                                strip_prefix + "'");
    }
    // ParseDecimal, not strtoull: a size past 2^64-1 is refused, not saturated.
    const std::string size = c.ChildText("Size");
    Result<uint64_t> n = ParseDecimal(size);
    if (!n.ok()) {
      return Status::Corruption("ListObjectsV2 entry '" + *key + "' has size '" + size + "'");
    }
    page.objects.push_back(ObjectInfo{key->substr(strip_prefix.size()), *n, c.ChildText("ETag")});
  }
  if (doc->ChildText("IsTruncated") == "true") {
    page.next_token = doc->ChildText("NextContinuationToken");
    if (page.next_token.empty()) {
      return Status::Corruption("ListObjectsV2 reply is truncated but has no continuation token");
    }
  }
  return page;
}

}  // namespace shoal
