// Hexadecimal digits: encoding bytes as text and reading them back.
#ifndef SHOAL_HEX_H_
#define SHOAL_HEX_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shoal {
namespace hex {

// Digit tables indexed by a value 0..15.
inline constexpr char kLowerDigits[] = "0123456789abcdef";
// RFC 3986 asks for upper case in percent-escapes.
inline constexpr char kUpperDigits[] = "0123456789ABCDEF";

// The value 0..15 of one hex digit (either case), or -1 for any other char.
int DigitValue(char c);

// Lowercase hex of `len` bytes.
std::string Encode(const uint8_t* data, size_t len);

// Decodes exactly `len` bytes from 2*len hex digits (either case). False on
// any other length or a non-hex character.
bool Decode(std::string_view text, uint8_t* out, size_t len);

}  // namespace hex
}  // namespace shoal

#endif  // SHOAL_HEX_H_
