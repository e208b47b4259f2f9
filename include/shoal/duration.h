// Human durations for flags such as --ttl.
#ifndef SHOAL_DURATION_H_
#define SHOAL_DURATION_H_

#include <chrono>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// Parses a positive whole number followed by one unit: "30d", "12h", "15m",
// "3600s", "250ms". At most 100 years. Anything else is InvalidArgument.
// Zero ("0s") is refused unless `allow_zero`, for settings where it means
// "no delay" rather than a mistake.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text, bool allow_zero = false);

}  // namespace shoal

#endif  // SHOAL_DURATION_H_
