#include "read/preconditions.h"

#include <ctime>

namespace shoal {
namespace {

// True if the comma-separated entity tags in `list` hold `etag`, or are "*".
bool ListMatches(const std::string& list, const std::string& etag) {
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    const size_t b = item.find_first_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, item.find_last_not_of(" \t") - b + 1);
    if (item == "*" || item == etag) return true;
    if (comma == std::string::npos) return false;
    start = comma + 1;
  }
}

}  // namespace

std::optional<int64_t> ParseHttpDate(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

PreconditionOutcome EvaluatePreconditions(const Preconditions& p, const std::string& etag,
                                          int64_t last_modified_s) {
  if (p.if_match) {
    if (!ListMatches(*p.if_match, etag)) return PreconditionOutcome::kFailed;
  } else if (p.if_unmodified_since) {
    std::optional<int64_t> since = ParseHttpDate(*p.if_unmodified_since);
    if (since && last_modified_s > *since) return PreconditionOutcome::kFailed;
  }
  if (p.if_none_match) {
    if (ListMatches(*p.if_none_match, etag)) return PreconditionOutcome::kNotModified;
  } else if (p.if_modified_since) {
    std::optional<int64_t> since = ParseHttpDate(*p.if_modified_since);
    if (since && last_modified_s <= *since) return PreconditionOutcome::kNotModified;
  }
  return PreconditionOutcome::kProceed;
}

}  // namespace shoal
