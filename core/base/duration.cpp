#include "shoal/duration.h"

#include <cstdint>
#include <string>

namespace shoal {

Result<std::chrono::milliseconds> ParseDuration(std::string_view text, bool allow_zero) {
  constexpr int64_t kMaxMs = int64_t(100) * 366 * 24 * 3600 * 1000;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("duration '" + std::string(text.substr(0, 40)) + "' " + why +
                                   "; use a number and a unit, like 30d, 12h, 15m or 3600s");
  };
  size_t digits = 0;
  int64_t value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    if (value > kMaxMs) return bad("is too long");
    value = value * 10 + (text[digits] - '0');
    ++digits;
  }
  if (digits == 0) return bad("does not start with a number");
  std::string_view unit = text.substr(digits);
  int64_t scale;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60 * 1000;
  } else if (unit == "h") {
    scale = 3600 * 1000;
  } else if (unit == "d") {
    scale = 24 * 3600 * 1000;
  } else {
    return bad(unit.empty() ? "has no unit" : "has an unknown unit");
  }
  if (value == 0 && !allow_zero) return bad("is zero");
  if (value > kMaxMs / scale) return bad("is longer than 100 years");
  return std::chrono::milliseconds(value * scale);
}

}  // namespace shoal
