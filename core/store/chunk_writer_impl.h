// ChunkWriterImpl: the ChunkWriter that ChunkStoreImpl::BeginWrite returns.
// It owns a preallocated temporary file under tmp/ and the hashes of the
// blocks written so far.
//
// Thread-safety: as ChunkWriter. mu_ guards the block hashes and the state;
// data is written and hashed outside it.
#ifndef SHOAL_CORE_CHUNK_WRITER_IMPL_H_
#define SHOAL_CORE_CHUNK_WRITER_IMPL_H_

#include <mutex>
#include <string>
#include <vector>

#include "shoal/chunk_writer.h"
#include "shoal/posix_file.h"

namespace shoal {

class ChunkStoreImpl;

class ChunkWriterImpl final : public ChunkWriter {
 public:
  // Takes over `fd`, open on `tmp_path`, and a reservation of `size` bytes.
  ChunkWriterImpl(ChunkStoreImpl* store, const ChunkId& id, uint64_t size, bool owned, bool sync,
                  ScopedFd fd, std::string tmp_path);
  ~ChunkWriterImpl() override;

  const ChunkId& id() const override { return id_; }
  uint64_t size() const override { return size_; }
  Status WriteAt(uint64_t offset, const uint8_t* data, size_t len) override;
  Result<Digest> BlockHash(uint64_t index) const override;
  uint64_t blocks_written() const override;
  Status Commit() override;
  void Abort() override;

  // Writes the whole chunk with block hashes the caller already has.
  // REQUIRES: leaves.size() == BlockCount(size()).
  Status WriteAllHashed(const uint8_t* data, const std::vector<Digest>& leaves);

 private:
  // Writes `len` bytes at `offset` and, with sync, starts writeback of
  // [writeback_from, offset + len) when that range is not empty.
  Status WriteData(uint64_t offset, const uint8_t* data, size_t len, uint64_t writeback_from);
  void AbortLocked();

  // Constant after construction.
  ChunkStoreImpl* const store_;
  const ChunkId id_;
  const uint64_t size_;
  const bool owned_;
  const bool sync_;
  const std::string tmp_path_;
  const ScopedFd fd_;

  mutable std::mutex mu_;
  // Protected by mu_.
  std::vector<Digest> leaves_;
  std::vector<bool> have_;
  uint64_t have_count_ = 0;
  bool finished_ = false;  // committed or aborted
};

}  // namespace shoal

#endif  // SHOAL_CORE_CHUNK_WRITER_IMPL_H_
