#include "swarm/announce_numbers.h"

#include <limits>

#include "shoal/decimal.h"

namespace shoal::tracker {
namespace {

// Parses query[key] into *out if present; `required` makes absence an error.
Status Read(const std::map<std::string, std::string>& query, const char* key, bool required,
            uint64_t min, uint64_t max, uint64_t* out) {
  auto it = query.find(key);
  if (it == query.end()) {
    return required ? Status::InvalidArgument(std::string(key) + ": missing; send a number from " +
                                              std::to_string(min) + " to " + std::to_string(max))
                    : Status::OK();
  }
  Result<uint64_t> v = ParseDecimal(it->second, min, max);
  if (!v.ok()) return v.status().WithContext(key);
  *out = *v;
  return Status::OK();
}

}  // namespace

Result<AnnounceNumbers> ParseAnnounceNumbers(const std::map<std::string, std::string>& query) {
  constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();
  AnnounceNumbers n;
  uint64_t port = 0, numwant = n.numwant;
  SHOAL_RETURN_IF_ERROR(Read(query, "port", true, 1, 65535, &port));
  SHOAL_RETURN_IF_ERROR(
      Read(query, "numwant", false, 0, std::numeric_limits<uint32_t>::max(), &numwant));
  SHOAL_RETURN_IF_ERROR(Read(query, "left", false, 0, kAny, &n.left));
  SHOAL_RETURN_IF_ERROR(Read(query, "uploaded", false, 0, kAny, &n.uploaded));
  SHOAL_RETURN_IF_ERROR(Read(query, "downloaded", false, 0, kAny, &n.downloaded));
  n.port = static_cast<uint16_t>(port);
  n.numwant = static_cast<uint32_t>(numwant);
  return n;
}

}  // namespace shoal::tracker
