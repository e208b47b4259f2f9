#include "shoal/origin_fetch.h"

#include "shoal/chunk_writer.h"

namespace shoal {
namespace {

class WriterSink final : public ByteSink {
 public:
  explicit WriterSink(ChunkWriter& w) : w_(w) {}
  Status Write(const uint8_t* data, size_t len) override {
    if (offset_ + len > w_.size()) {
      return Status::Corruption("origin sent more than the chunk's " + std::to_string(w_.size()) +
                                " bytes");
    }
    SHOAL_RETURN_IF_ERROR(w_.WriteAt(offset_, data, len));
    offset_ += len;
    return Status::OK();
  }
  uint64_t offset() const { return offset_; }

 private:
  ChunkWriter& w_;
  uint64_t offset_ = 0;
};

}  // namespace

Result<uint64_t> FetchChunkFromOrigin(Origin& origin, ChunkStore& store, const ChunkId& id,
                                      uint64_t size) {
  if (store.Contains(id)) return uint64_t{0};
  auto writer = store.BeginWrite(id, size);
  // Delivered meanwhile, by a peer or another fetch.
  if (writer.status().code() == Status::Code::kAlreadyExists) return uint64_t{0};
  if (!writer.ok()) return writer.status();
  WriterSink sink(**writer);
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

}  // namespace shoal
