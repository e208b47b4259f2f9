// Reading a ListObjectsV2 reply into a ListPage.
#ifndef SHOAL_CORE_S3_LIST_H_
#define SHOAL_CORE_S3_LIST_H_

#include <string>

#include "shoal/origin.h"

namespace shoal {

// Parses `xml`. Keys are URL-decoded when the reply says EncodingType=url,
// and `strip_prefix` (the origin's own prefix) is removed from each.
// Corruption if the reply is malformed or a key lacks the prefix.
Result<ListPage> ParseListObjectsV2(const std::string& xml, const std::string& strip_prefix);

}  // namespace shoal

#endif  // SHOAL_CORE_S3_LIST_H_
