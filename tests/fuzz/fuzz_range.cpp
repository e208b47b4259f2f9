// A Range header as the agent's read routes answer it (agent/read/
// byte_range.h): AnswerRange for a resource size the first byte picks,
// then Content-Range for a partial answer. Whatever the header, a partial
// range lies inside the resource.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz/fuzz_check.h"
#include "read/byte_range.h"

using shoal::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // Sizes at the edges: empty, one byte, a chunk, and the largest ones.
  static constexpr uint64_t kSizes[] = {
      0, 1, 2, 1000, 16u << 20, (1ull << 44) + 1, UINT64_MAX - 1, UINT64_MAX};
  const uint64_t resource = kSizes[data[0] % (sizeof(kSizes) / sizeof(kSizes[0]))];
  std::optional<std::string> header(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  shoal::RangeAnswer a = shoal::AnswerRange(header, resource);
  if (a.kind != shoal::RangeAnswer::Kind::kPartial) return 0;
  Check(a.range.first <= a.range.last, "a partial range ends before it starts");
  Check(a.range.last < resource, "a partial range ends past the resource");
  Check(a.range.length() >= 1 && a.range.length() <= resource, "a partial range's length");
  std::string cr = shoal::ContentRange(a.range, resource);
  Check(cr.rfind("bytes ", 0) == 0, "Content-Range does not start with 'bytes '");
  return 0;
}
