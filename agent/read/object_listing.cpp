#include "read/object_listing.h"

#include <algorithm>
#include <cstdint>

#include "read/decimal_param.h"
#include "shoal/base64url.h"

namespace shoal {
namespace {

// A token is the base64url of "k" + the last key returned, or "p" + the
// last common prefix returned: the next page starts after it (after every
// key under it, for a prefix).
std::string MakeToken(char kind, const std::string& last) {
  return base64url::Encode(std::string(1, kind) + last);
}

// True if `key` is a common prefix a listing of `prefix` by `delimiter`
// gives: the prefix, then no delimiter until the one `key` ends with.
bool IsCommonPrefix(const std::string& key, const std::string& prefix,
                    const std::string& delimiter) {
  if (delimiter.empty() || key.size() < prefix.size() + delimiter.size()) return false;
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  return key.find(delimiter, prefix.size()) == key.size() - delimiter.size();
}

}  // namespace

Result<int> ParseMaxKeys(const std::string* text) {
  if (text == nullptr) return 1000;
  Result<uint64_t> n = ParseDecimalParam("max-keys", *text, 0, INT32_MAX);
  if (!n.ok()) return n.status();
  return static_cast<int>(std::min<uint64_t>(1000, *n));
}

Result<ObjectPage> ListObjects(const std::vector<ObjectEntry>& entries,
                               const ObjectListRequest& request) {
  std::string after = request.start_after;
  // Skip every key that starts with `after`: a common prefix already given.
  bool after_prefix = IsCommonPrefix(after, request.prefix, request.delimiter);
  if (!request.continuation.empty()) {
    std::optional<std::string> raw = base64url::Decode(request.continuation);
    if (!raw || raw->empty() || ((*raw)[0] != 'k' && (*raw)[0] != 'p')) {
      return Status::InvalidArgument("the continuation token is not one this endpoint issued");
    }
    after = raw->substr(1);
    after_prefix = (*raw)[0] == 'p';
  }
  ObjectPage page;
  const std::string& prefix = request.prefix;
  auto it = std::lower_bound(entries.begin(), entries.end(), std::max(prefix, after),
                             [](const ObjectEntry& e, const std::string& k) { return e.key < k; });
  std::string last_key;
  char last_kind = 0;
  for (; it != entries.end(); ++it) {
    const std::string& key = it->key;
    if (key.compare(0, prefix.size(), prefix) != 0) break;  // sorted: no more under the prefix
    if (key <= after && !after.empty()) continue;
    if (after_prefix && key.compare(0, after.size(), after) == 0) continue;
    std::string group;
    if (!request.delimiter.empty()) {
      size_t d = key.find(request.delimiter, prefix.size());
      if (d != std::string::npos) group = key.substr(0, d + request.delimiter.size());
    }
    if (!group.empty() && !page.common_prefixes.empty() && page.common_prefixes.back() == group)
      continue;
    if (page.key_count() >= request.max_keys) {
      page.truncated = request.max_keys > 0;
      break;
    }
    if (group.empty()) {
      page.contents.push_back(&*it);
      last_key = key;
      last_kind = 'k';
    } else {
      page.common_prefixes.push_back(group);
      last_key = group;
      last_kind = 'p';
    }
  }
  if (page.truncated) {
    page.next_continuation = MakeToken(last_kind, last_key);
    page.next_marker = last_key;
  }
  return page;
}

}  // namespace shoal
