#include "shoal/uri_encode.h"

#include <utility>

#include "shoal/hex.h"

namespace shoal {
namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string Encode(std::string_view text, bool keep_slash) {
  std::string out;
  out.reserve(text.size() * 3 / 2);
  for (unsigned char c : text) {
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex::kUpperDigits[c >> 4]);
      out.push_back(hex::kUpperDigits[c & 15]);
    }
  }
  return out;
}

}  // namespace

std::string UriEncodePath(std::string_view key) { return Encode(key, true); }

std::string UriEncodeQuery(std::string_view text) { return Encode(text, false); }

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space,
                                         bool allow_nul) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      int hi = hex::DigitValue(text[i + 1]), lo = hex::DigitValue(text[i + 2]);
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0 && !allow_nul)) return std::nullopt;
      out += char(hi << 4 | lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::string> UriDecode(std::string_view text) {
  std::optional<std::string> out = PercentDecode(text, /*plus_is_space=*/false, /*allow_nul=*/true);
  if (!out) {
    return Status::InvalidArgument("bad percent-escape in '" + std::string(text.substr(0, 200)) +
                                   "'");
  }
  return std::move(*out);
}

}  // namespace shoal
