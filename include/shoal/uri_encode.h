// Percent-encoding as S3 and SigV4 want it (RFC 3986 unreserved characters
// pass through, every other byte becomes %XX in upper case).
#ifndef SHOAL_URI_ENCODE_H_
#define SHOAL_URI_ENCODE_H_

#include <optional>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// Encodes an object key for a URL path: '/' stays, so "a b/c+d" becomes
// "a%20b/c%2Bd". Non-ASCII bytes (UTF-8) are encoded byte by byte.
std::string UriEncodePath(std::string_view key);

// Encodes a query parameter name or value: '/' becomes %2F too.
std::string UriEncodeQuery(std::string_view text);

// Decodes %XX escapes; '+' becomes ' ' only if `plus_is_space` (for query
// strings). nullopt for a truncated or non-hex escape, or an escaped NUL
// unless `allow_nul` (query values may be binary, as BitTorrent info hashes are).
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space,
                                         bool allow_nul = false);

// PercentDecode with '+' kept as '+' and NUL allowed, for S3 keys and SigV4
// query parameters. InvalidArgument, quoting the text, on a bad escape.
Result<std::string> UriDecode(std::string_view text);

}  // namespace shoal

#endif  // SHOAL_URI_ENCODE_H_
