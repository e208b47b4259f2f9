// Whole numbers in text that arrives from outside: query parameters,
// addresses, config values.
//
// Strict where strtoul is lenient: strtoul skips spaces, takes a sign and
// wraps "-1" to 2^64-1, and stops quietly at the first stray byte. Here the
// text must be 1 to 20 ASCII digits (20 is the length of 2^64-1; leading
// zeros are allowed within that) and nothing else, and the value must lie
// in [min, max].
#ifndef SHOAL_DECIMAL_H_
#define SHOAL_DECIMAL_H_

#include <cstdint>
#include <limits>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// InvalidArgument "must be a whole number from MIN to MAX, not 'TEXT'" for
// empty text, more than 20 digits, any byte that is not a digit (signs,
// spaces, "0x"), or a value outside [min, max], overflow included. Callers add what the number is
// with WithContext ("port: must be ..."). Binary bytes in TEXT are shown as
// '?', and long text is cut.
// REQUIRES: min <= max.
Result<uint64_t> ParseDecimal(std::string_view text, uint64_t min = 0,
                              uint64_t max = std::numeric_limits<uint64_t>::max());

}  // namespace shoal

#endif  // SHOAL_DECIMAL_H_
