#include "read/decimal_param.h"

#include <string>

namespace shoal {

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = uint64_t(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return std::nullopt;  // would not fit in 64 bits
    v = v * 10 + digit;
  }
  return v;
}

Result<uint64_t> ParseDecimalParam(std::string_view name, std::string_view text, uint64_t min,
                                   uint64_t max) {
  std::optional<uint64_t> v = ParseDecimal(text);
  if (v && *v >= min && *v <= max) return *v;
  std::string shown(text.substr(0, 32));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';  // keep the message one line
  }
  return Status::InvalidArgument(
      std::string(name) + " '" + shown + (text.size() > 32 ? "...'" : "'") +
      " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max));
}

}  // namespace shoal
