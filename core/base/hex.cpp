#include "shoal/hex.h"

namespace shoal {
namespace hex {

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Encode(const uint8_t* data, size_t len) {
  std::string out(len * 2, '\0');
  for (size_t i = 0; i < len; ++i) {
    out[2 * i] = kLowerDigits[data[i] >> 4];
    out[2 * i + 1] = kLowerDigits[data[i] & 0xf];
  }
  return out;
}

bool Decode(std::string_view text, uint8_t* out, size_t len) {
  if (text.size() != len * 2) return false;
  for (size_t i = 0; i < len; ++i) {
    int hi = DigitValue(text[2 * i]);
    int lo = DigitValue(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace hex
}  // namespace shoal
