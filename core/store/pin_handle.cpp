#include "shoal/pin_handle.h"

#include <unistd.h>

#include "shoal/chunk_span.h"

namespace shoal {

PinHandle& PinHandle::operator=(PinHandle&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = other.owner_;
    id_ = other.id_;
    size_ = other.size_;
    generation_ = other.generation_;
    other.owner_ = nullptr;
  }
  return *this;
}

void PinHandle::Release() {
  if (owner_ == nullptr) return;
  owner_->Unpin(id_, generation_);
  owner_ = nullptr;
}

ChunkSpan::~ChunkSpan() {
  if (fd_ >= 0) ::close(fd_);
}

ChunkSpan& ChunkSpan::operator=(ChunkSpan&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    offset_ = other.offset_;
    length_ = other.length_;
    pin_ = std::move(other.pin_);
    other.fd_ = -1;
  }
  return *this;
}

}  // namespace shoal
