#include "shoal/decimal.h"

#include <cassert>
#include <string>

namespace shoal {
namespace {

// The text as an error message can show it: printable ASCII, at most 40
// bytes.
std::string Printable(std::string_view text) {
  constexpr size_t kShown = 40;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    unsigned char ch = static_cast<unsigned char>(text[i]);
    out += (ch >= 0x20 && ch < 0x7f) ? static_cast<char>(ch) : '?';
  }
  if (text.size() > kShown) out += "...";
  return out;
}

}  // namespace

Result<uint64_t> ParseDecimal(std::string_view text, uint64_t min, uint64_t max) {
  assert(min <= max);
  auto refuse = [&] {
    return Status::InvalidArgument("must be a whole number from " + std::to_string(min) + " to " +
                                   std::to_string(max) + ", not '" + Printable(text) + "'");
  };
  constexpr size_t kMaxDigits = 20;  // strlen("18446744073709551615")
  if (text.empty() || text.size() > kMaxDigits) return refuse();
  uint64_t value = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return refuse();
    uint64_t digit = static_cast<uint64_t>(ch - '0');
    if (value > (max - digit) / 10) return refuse();  // value * 10 + digit > max
    value = value * 10 + digit;
  }
  if (value < min) return refuse();
  return value;
}

}  // namespace shoal
