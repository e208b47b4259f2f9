// ChunkSpan: an open chunk file and a byte range in it, for sendfile(2) or
// splice(2). The span owns the descriptor and a pin on the chunk, so the
// file stays in place until the span is destroyed.
//
// Move-only. REQUIRES: destroyed before its store. Thread-safety: one span
// is used by one thread at a time.
#ifndef SHOAL_CHUNK_SPAN_H_
#define SHOAL_CHUNK_SPAN_H_

#include <cstdint>

#include "shoal/pin_handle.h"

namespace shoal {

class ChunkSpan {
 public:
  ChunkSpan() = default;
  // Takes ownership of `fd`.
  ChunkSpan(int fd, uint64_t offset, uint64_t length, PinHandle pin)
      : fd_(fd), offset_(offset), length_(length), pin_(std::move(pin)) {}
  ~ChunkSpan();
  ChunkSpan(ChunkSpan&& other) noexcept { *this = std::move(other); }
  ChunkSpan& operator=(ChunkSpan&& other) noexcept;
  ChunkSpan(const ChunkSpan&) = delete;
  ChunkSpan& operator=(const ChunkSpan&) = delete;

  // Read-only descriptor of the chunk file; valid while the span lives.
  int fd() const { return fd_; }
  // Where the range starts in the file, and how many bytes it has.
  uint64_t offset() const { return offset_; }
  uint64_t length() const { return length_; }
  const ChunkId& id() const { return pin_.id(); }

 private:
  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t length_ = 0;
  PinHandle pin_;
};

}  // namespace shoal

#endif  // SHOAL_CHUNK_SPAN_H_
