// ByteRange: what a request's Range header asks of a resource of known
// size (RFC 9110, section 14), for one range only.
#ifndef SHOAL_AGENT_READ_BYTE_RANGE_H_
#define SHOAL_AGENT_READ_BYTE_RANGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shoal {

struct ByteRange {
  uint64_t first = 0;  // first byte, inclusive
  uint64_t last = 0;   // last byte, inclusive
  uint64_t length() const { return last - first + 1; }
};

struct RangeAnswer {
  enum class Kind {
    kWhole,          // no Range header, or one to ignore: 200 with everything
    kPartial,        // 206 with `range`
    kUnsatisfiable,  // 416, "Content-Range: bytes */size"
  };
  Kind kind = Kind::kWhole;
  ByteRange range;  // for kPartial
};

// How to answer `header` (the Range field, if any) for `size` bytes.
// "bytes=a-b", "bytes=a-" and "bytes=-n" are honoured, clamped to the end.
// A malformed header, another unit or several ranges are ignored, as RFC
// 9110 allows, so the whole resource is sent. A range that starts past the
// end, a suffix of zero bytes, or any range of an empty resource is
// unsatisfiable.
RangeAnswer AnswerRange(const std::optional<std::string>& header, uint64_t size);

// "bytes 0-99/1000".
std::string ContentRange(const ByteRange& range, uint64_t size);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_BYTE_RANGE_H_
