#include "shoal/byte_size.h"

#include <cstdio>

namespace shoal {

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 6) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  return buf;
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "size '" + std::string(text.substr(0, 40)) +
        "' must be a number with an optional unit: 512MiB, 200GiB, 10GB");
  };
  size_t digits = 0;
  uint64_t value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    if (value > (1ull << 62) / 10) return bad();
    value = value * 10 + static_cast<uint64_t>(text[digits] - '0');
    ++digits;
  }
  if (digits == 0) return bad();
  std::string unit(text.substr(digits));
  static const struct {
    const char* name;
    uint64_t scale;
  } kUnits[] = {{"", 1},
                {"B", 1},
                {"KiB", 1ull << 10},
                {"MiB", 1ull << 20},
                {"GiB", 1ull << 30},
                {"TiB", 1ull << 40},
                {"KB", 1000},
                {"MB", 1000000},
                {"GB", 1000000000},
                {"TB", 1000000000000ull}};
  for (const auto& u : kUnits) {
    if (unit == u.name) {
      if (value > (1ull << 62) / u.scale) return bad();
      return value * u.scale;
    }
  }
  return bad();
}

}  // namespace shoal
