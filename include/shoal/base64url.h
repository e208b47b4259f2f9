// Base64url (RFC 4648 section 5) without padding, as used inside tokens.
//
// Decoding is strict: only the URL-safe alphabet, no padding, no
// whitespace, and the unused low bits of the last character must be zero, so
// every byte string has exactly one encoding.
#ifndef SHOAL_BASE64URL_H_
#define SHOAL_BASE64URL_H_

#include <optional>
#include <string>
#include <string_view>

namespace shoal {
namespace base64url {

std::string Encode(std::string_view bytes);

// The decoded bytes, or nullopt for anything that Encode could not produce.
std::optional<std::string> Decode(std::string_view text);

}  // namespace base64url
}  // namespace shoal

#endif  // SHOAL_BASE64URL_H_
