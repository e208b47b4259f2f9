#include "shoal/origin_fetch.h"

#include <condition_variable>
#include <mutex>
#include <set>
#include <utility>

#include "shoal/chunk_writer.h"

namespace shoal {
namespace {

class WriterSink final : public ByteSink {
 public:
  WriterSink(ChunkWriter& w, std::atomic<uint64_t>* streamed) : w_(w), streamed_(streamed) {}
  Status Write(const uint8_t* data, size_t len) override {
    if (offset_ + len > w_.size()) {
      return Status::Corruption("origin sent more than the chunk's " + std::to_string(w_.size()) +
                                " bytes");
    }
    SHOAL_RETURN_IF_ERROR(w_.WriteAt(offset_, data, len));
    offset_ += len;
    if (streamed_ != nullptr) streamed_->fetch_add(len, std::memory_order_relaxed);
    return Status::OK();
  }
  uint64_t offset() const { return offset_; }

 private:
  ChunkWriter& w_;
  std::atomic<uint64_t>* const streamed_;  // may be null
  uint64_t offset_ = 0;
};

// The chunks being fetched into each store now. A second fetch of one waits
// for the first and then finds it stored, so two orders for one chunk (from
// two trackers of a fleet, or an order and a read) read the origin once.
class FetchesInFlight {
 public:
  // Waits while (store, id) is being fetched; returns false if it was (the
  // caller looks at the store again), true once the caller holds it.
  bool Claim(const ChunkStore* store, const ChunkId& id) {
    std::unique_lock<std::mutex> lock(mu_);
    bool waited = false;
    while (in_flight_.count({store, id}) != 0) {
      waited = true;
      done_.wait(lock);
    }
    if (waited) return false;
    in_flight_.insert({store, id});
    return true;
  }
  void Release(const ChunkStore* store, const ChunkId& id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase({store, id});
    }
    done_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable done_;
  std::set<std::pair<const ChunkStore*, ChunkId>> in_flight_;  // protected by mu_
};

FetchesInFlight& InFlight() {
  static FetchesInFlight* in_flight = new FetchesInFlight();  // never destroyed
  return *in_flight;
}

Result<uint64_t> FetchOnce(Origin& origin, ChunkStore& store, const ChunkId& id, uint64_t size,
                           const ChunkWriteOptions& wo, std::atomic<uint64_t>* streamed);

}  // namespace

Result<uint64_t> FetchChunkFromOrigin(Origin& origin, ChunkStore& store, const ChunkId& id,
                                      uint64_t size, const ChunkWriteOptions& wo,
                                      std::atomic<uint64_t>* streamed) {
  for (;;) {
    if (store.Contains(id)) return uint64_t{0};
    if (!InFlight().Claim(&store, id)) continue;  // another fetch finished: look again
    Result<uint64_t> r = FetchOnce(origin, store, id, size, wo, streamed);
    InFlight().Release(&store, id);
    return r;
  }
}

namespace {

Result<uint64_t> FetchOnce(Origin& origin, ChunkStore& store, const ChunkId& id, uint64_t size,
                           const ChunkWriteOptions& wo, std::atomic<uint64_t>* streamed) {
  auto writer = store.BeginWrite(id, size, wo);
  // Delivered meanwhile, by a peer or another fetch.
  if (writer.status().code() == Status::Code::kAlreadyExists) return uint64_t{0};
  if (!writer.ok()) return writer.status();
  WriterSink sink(**writer, streamed);
  Status s = origin.Get(ChunkKey(id), 0, size, sink);
  if (!s.ok()) return s.WithContext("fetch chunk " + id.ShortHex() + " from " + origin.Describe());
  if (sink.offset() != size) {
    return Status::Corruption("chunk " + id.ShortHex() + " in " + origin.Describe() + " is " +
                              std::to_string(sink.offset()) + " bytes, expected " +
                              std::to_string(size));
  }
  s = (*writer)->Commit();
  if (!s.ok()) return s.WithContext("chunk " + id.ShortHex() + " from " + origin.Describe());
  return size;
}

}  // namespace

}  // namespace shoal
