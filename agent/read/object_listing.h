// ListObjects' paging (version 1 and 2), over keys already sorted: prefix,
// delimiter (common prefixes), max-keys, start-after or marker, and
// continuation tokens, with S3's rules for how they combine.
#ifndef SHOAL_AGENT_READ_OBJECT_LISTING_H_
#define SHOAL_AGENT_READ_OBJECT_LISTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct ObjectEntry {
  std::string key;
  uint64_t size = 0;
  std::string etag;           // quoted
  std::string last_modified;  // "2026-01-02T03:04:05.000Z"
};

struct ObjectListRequest {
  std::string prefix;
  std::string delimiter;     // empty: no grouping
  std::string start_after;   // v2's start-after, v1's marker; ignored when continuation is set
  std::string continuation;  // a token from an earlier page
  int max_keys = 1000;       // 0 to 1000
};

struct ObjectPage {
  std::vector<const ObjectEntry*> contents;  // into the listed entries
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_continuation;  // set when truncated
  // Set when truncated: the last key or common prefix on this page, which
  // as the next request's marker (start_after) continues after it.
  std::string next_marker;
  int key_count() const { return static_cast<int>(contents.size() + common_prefixes.size()); }
};

// One page of `entries` (sorted by key, unique). Contents and common
// prefixes together count against max_keys, in key order; a common prefix
// is the part of a key up to and including the first delimiter after the
// prefix. A start_after that is itself a common prefix (it ends with the
// delimiter) skips every key under it, so a v1 NextMarker that names a
// common prefix pages on past it. InvalidArgument for a continuation token
// this function did not make.
Result<ObjectPage> ListObjects(const std::vector<ObjectEntry>& entries,
                               const ObjectListRequest& request);

// Parses max-keys: absent means 1000; more than 1000 is capped at 1000;
// InvalidArgument for anything but a non-negative number.
Result<int> ParseMaxKeys(const std::string* text);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_OBJECT_LISTING_H_
