// DecimalParam: a number a client sent in a query parameter or header
// (max-keys, X-Amz-Expires, partNumber, a Range bound), read strictly.
//
// Only plain decimal digits are accepted: no sign, no spaces, no "0x", no
// exponent, nothing after the digits. std::stoi and strtoul accept " 12",
// "+12", "12abc" and wrap "-1" to a huge value, so a malformed number could
// slip through as a different one; this never does.
#ifndef SHOAL_AGENT_READ_DECIMAL_PARAM_H_
#define SHOAL_AGENT_READ_DECIMAL_PARAM_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// The value of `text` if it is 1 to 20 decimal digits whose value fits in
// 64 bits; nullopt otherwise. Leading zeros are allowed ("007" is 7).
std::optional<uint64_t> ParseDecimal(std::string_view text);

// The value of `text` if it is a decimal number in [min, max]; otherwise
// InvalidArgument naming the parameter `name`, the text (cut to 32
// characters) and the allowed range, e.g.
//   "max-keys 'abc' must be a whole number from 0 to 2147483647".
// REQUIRES: min <= max.
Result<uint64_t> ParseDecimalParam(std::string_view name, std::string_view text, uint64_t min,
                                   uint64_t max);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_DECIMAL_PARAM_H_
