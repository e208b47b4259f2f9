// DecimalParam: a number a client sent in a query parameter or header
// (max-keys, X-Amz-Expires, partNumber), read strictly with ParseDecimal
// (shoal/decimal.h): plain decimal digits only, so " 12", "+12", "12abc" or
// "-1" never slip through as a different number.
#ifndef SHOAL_AGENT_READ_DECIMAL_PARAM_H_
#define SHOAL_AGENT_READ_DECIMAL_PARAM_H_

#include <cstdint>
#include <string_view>

#include "shoal/decimal.h"
#include "shoal/status.h"

namespace shoal {

// The value of `text` if it is a decimal number in [min, max]; otherwise
// InvalidArgument naming the parameter `name`, the text (cut to 32
// characters) and the allowed range, e.g.
//   "max-keys 'abc' must be a whole number from 0 to 2147483647".
// S3 clients read this message in an error body, so it leads with the
// parameter's name rather than ParseDecimal's "must be ..., not 'TEXT'".
// REQUIRES: min <= max.
Result<uint64_t> ParseDecimalParam(std::string_view name, std::string_view text, uint64_t min,
                                   uint64_t max);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_DECIMAL_PARAM_H_
