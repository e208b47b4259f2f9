// The XML bodies of the agent's S3 endpoint: error answers, ListObjects
// (version 1 and 2), ListBuckets and GetBucketLocation results, in S3's own
// element names.
#ifndef SHOAL_AGENT_READ_S3_XML_H_
#define SHOAL_AGENT_READ_S3_XML_H_

#include <string>
#include <string_view>
#include <vector>

#include "read/object_listing.h"

namespace shoal {

// <Error><Code/><Message/><Resource/><RequestId/></Error>
std::string S3ErrorXml(std::string_view code, std::string_view message, std::string_view resource,
                       std::string_view request_id);

// Which ListObjects a listing answers: version 1 pages with Marker and
// NextMarker, version 2 with continuation tokens and StartAfter.
enum class ListVersion { kV1, kV2 };

// <ListBucketResult> for one page. With `url_encoding` (encoding-type=url),
// keys and prefixes (and v1's markers) are percent-encoded as S3 does. In
// v1, request.start_after is the marker, and NextMarker is given when the
// page is truncated and a delimiter was asked for, as on S3 (without a
// delimiter, clients continue after the last key).
std::string ListBucketResultXml(const std::string& bucket, const ObjectListRequest& request,
                                const ObjectPage& page, bool url_encoding,
                                ListVersion version = ListVersion::kV2);

// <ListAllMyBucketsResult>: `owner` as Owner ID and DisplayName, and each
// bucket with the same CreationDate ("2026-01-02T03:04:05.000Z").
std::string ListAllMyBucketsXml(const std::string& owner, const std::vector<std::string>& buckets,
                                const std::string& creation_date);

// <LocationConstraint>: `region`, or empty (S3's word for us-east-1).
std::string LocationConstraintXml(const std::string& region);

// Escapes &, <, >, " and ' for element text.
std::string XmlEscape(std::string_view text);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_S3_XML_H_
