// A small, strict XML reader for S3's responses: ListObjectsV2, errors and
// multipart replies. It builds a tree of elements with their text; it keeps
// no attributes, and refuses DTDs, processing instructions after the prolog,
// mismatched tags and unknown entities, so a malformed reply is an error
// rather than a half-read listing.
//
// Written here instead of taking Boost.PropertyTree because S3 replies need
// only this subset, and a strict reader makes bad replies fail loudly.
#ifndef SHOAL_CORE_XML_READER_H_
#define SHOAL_CORE_XML_READER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct XmlElement {
  std::string name;  // local name; a namespace prefix such as "s3:" is dropped
  std::string text;  // character data directly inside, entities decoded
  std::vector<XmlElement> children;

  // The first child named `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
  // The text of the first child named `name`, or "" if there is none.
  std::string ChildText(std::string_view name) const;
};

// Parses one document. Corruption with the byte offset on any error.
Result<XmlElement> ParseXml(std::string_view doc);

}  // namespace shoal

#endif  // SHOAL_CORE_XML_READER_H_
