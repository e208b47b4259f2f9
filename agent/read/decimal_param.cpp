#include "read/decimal_param.h"

#include <string>

namespace shoal {

Result<uint64_t> ParseDecimalParam(std::string_view name, std::string_view text, uint64_t min,
                                   uint64_t max) {
  Result<uint64_t> v = ParseDecimal(text, min, max);
  if (v.ok()) return v;
  std::string shown(text.substr(0, 32));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';  // keep the message one line
  }
  return Status::InvalidArgument(
      std::string(name) + " '" + shown + (text.size() > 32 ? "...'" : "'") +
      " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max));
}

}  // namespace shoal
