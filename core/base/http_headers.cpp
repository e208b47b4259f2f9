#include "shoal/http_headers.h"

#include <strings.h>

namespace shoal {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string_view TrimOws(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

std::string LowercaseHeaderName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<std::string> HttpHeaders::Get(std::string_view name) const {
  for (const Field& f : fields_) {
    if (SameName(f.first, name)) return f.second;
  }
  return std::nullopt;
}

void HttpHeaders::Remove(std::string_view name) {
  std::vector<Field> kept;
  for (Field& f : fields_) {
    if (!SameName(f.first, name)) kept.push_back(std::move(f));
  }
  fields_ = std::move(kept);
}

void HttpHeaders::Set(std::string_view name, std::string_view value) {
  Remove(name);
  Add(name, value);
}

void HttpHeaders::Add(std::string_view name, std::string_view value) {
  fields_.emplace_back(std::string(name), std::string(value));
}

}  // namespace shoal
