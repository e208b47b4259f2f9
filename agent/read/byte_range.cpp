#include "read/byte_range.h"

#include <strings.h>

#include "shoal/decimal.h"
#include "shoal/http_headers.h"

namespace shoal {
namespace {

// A non-empty run of digits that fits in 64 bits.
std::optional<uint64_t> Number(std::string_view s) {
  Result<uint64_t> n = ParseDecimal(s);
  if (!n.ok()) return std::nullopt;
  return *n;
}

}  // namespace

RangeAnswer AnswerRange(const std::optional<std::string>& header, uint64_t size) {
  RangeAnswer whole;
  if (!header) return whole;
  std::string_view h = TrimOws(*header);
  size_t eq = h.find('=');
  if (eq == std::string_view::npos) return whole;
  std::string_view unit = TrimOws(h.substr(0, eq));
  if (unit.size() != 5 || strncasecmp(unit.data(), "bytes", 5) != 0) return whole;
  std::string_view spec = TrimOws(h.substr(eq + 1));
  if (spec.find(',') != std::string_view::npos) return whole;
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return whole;
  std::string_view a = TrimOws(spec.substr(0, dash)), b = TrimOws(spec.substr(dash + 1));
  RangeAnswer out;
  out.kind = RangeAnswer::Kind::kPartial;
  if (a.empty()) {  // suffix: the last n bytes
    std::optional<uint64_t> n = Number(b);
    if (!n) return whole;
    if (*n == 0 || size == 0) return RangeAnswer{RangeAnswer::Kind::kUnsatisfiable, {}};
    out.range.first = size - std::min(*n, size);
    out.range.last = size - 1;
    return out;
  }
  std::optional<uint64_t> first = Number(a);
  if (!first) return whole;
  std::optional<uint64_t> last;
  if (!b.empty()) {
    last = Number(b);
    if (!last || *last < *first) return whole;
  }
  if (*first >= size) return RangeAnswer{RangeAnswer::Kind::kUnsatisfiable, {}};
  out.range.first = *first;
  out.range.last = last ? std::min(*last, size - 1) : size - 1;
  return out;
}

std::string ContentRange(const ByteRange& range, uint64_t size) {
  return "bytes " + std::to_string(range.first) + "-" + std::to_string(range.last) + "/" +
         std::to_string(size);
}

}  // namespace shoal
