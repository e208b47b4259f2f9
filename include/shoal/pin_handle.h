// PinHandle: holds one pin on a cached chunk. While any pin is held the
// chunk is not evicted. Dropping the handle (or Release()) drops the pin.
//
// Move-only. REQUIRES: the handle is released before its store is
// destroyed. Thread-safety: one handle is used by one thread at a time;
// handles of the same chunk may live on different threads.
#ifndef SHOAL_PIN_HANDLE_H_
#define SHOAL_PIN_HANDLE_H_

#include <cstdint>

#include "shoal/chunk_id.h"

namespace shoal {

class PinHandle {
 public:
  // What a store implements to take a pin back.
  class Owner {
   public:
    virtual void Unpin(const ChunkId& id, uint64_t generation) = 0;

   protected:
    ~Owner() = default;
  };

  PinHandle() = default;
  // For store implementations: a handle for a pin already taken.
  PinHandle(Owner* owner, const ChunkId& id, uint64_t size, uint64_t generation)
      : owner_(owner), id_(id), size_(size), generation_(generation) {}
  ~PinHandle() { Release(); }
  PinHandle(PinHandle&& other) noexcept { *this = std::move(other); }
  PinHandle& operator=(PinHandle&& other) noexcept;
  PinHandle(const PinHandle&) = delete;
  PinHandle& operator=(const PinHandle&) = delete;

  bool valid() const { return owner_ != nullptr; }
  const ChunkId& id() const { return id_; }
  uint64_t size() const { return size_; }

  // Drops the pin now; the handle becomes invalid. No-op if already invalid.
  void Release();

 private:
  Owner* owner_ = nullptr;
  ChunkId id_;
  uint64_t size_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace shoal

#endif  // SHOAL_PIN_HANDLE_H_
