// Percent-encoding as S3 and SigV4 want it (RFC 3986 unreserved characters
// pass through, every other byte becomes %XX in upper case).
#ifndef SHOAL_URI_ENCODE_H_
#define SHOAL_URI_ENCODE_H_

#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// Encodes an object key for a URL path: '/' stays, so "a b/c+d" becomes
// "a%20b/c%2Bd". Non-ASCII bytes (UTF-8) are encoded byte by byte.
std::string UriEncodePath(std::string_view key);

// Encodes a query parameter name or value: '/' becomes %2F too.
std::string UriEncodeQuery(std::string_view text);

// Decodes %XX escapes (and nothing else: '+' stays '+'). InvalidArgument on a
// truncated or non-hex escape.
Result<std::string> UriDecode(std::string_view text);

}  // namespace shoal

#endif  // SHOAL_URI_ENCODE_H_
