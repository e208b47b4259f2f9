// The XML bodies of the agent's S3 endpoint: error answers and
// ListObjectsV2 results, in S3's own element names.
#ifndef SHOAL_AGENT_READ_S3_XML_H_
#define SHOAL_AGENT_READ_S3_XML_H_

#include <string>
#include <string_view>

#include "read/object_listing.h"

namespace shoal {

// <Error><Code/><Message/><Resource/><RequestId/></Error>
std::string S3ErrorXml(std::string_view code, std::string_view message, std::string_view resource,
                       std::string_view request_id);

// <ListBucketResult> for one page. With `url_encoding` (encoding-type=url),
// keys and prefixes are percent-encoded as S3 does.
std::string ListBucketResultXml(const std::string& bucket, const ObjectListRequest& request,
                                const ObjectPage& page, bool url_encoding);

// Escapes &, <, >, " and ' for element text.
std::string XmlEscape(std::string_view text);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_S3_XML_H_
