#include "store/chunk_writer_impl.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "shoal/chunk_hash.h"
#include "shoal/merkle.h"
#include "shoal/sha256.h"
#include "store/chunk_store_impl.h"

namespace shoal {
namespace {

// Data is written and hashed in steps of this size. A write of a step or
// more (a put) starts writeback of each step at once, so the disk works
// while the CPU hashes the next.
constexpr size_t kStep = 1u << 20;

// A chunk written block by block as peers send it starts writeback once per
// window, when a write ends on the window's boundary. Starting it on every
// write (16 KiB blocks) made each disk thread submit writeback itself and
// wait on the device queue between blocks: a pull onto ext4 with
// --cache-sync ran at about 0.6x `dd conv=fdatasync`.
constexpr uint64_t kWritebackWindow = 4u << 20;

}  // namespace

ChunkWriterImpl::ChunkWriterImpl(ChunkStoreImpl* store, const ChunkId& id, uint64_t size,
                                 bool owned, bool sync, ScopedFd fd, std::string tmp_path)
    : store_(store),
      id_(id),
      size_(size),
      owned_(owned),
      sync_(sync),
      tmp_path_(std::move(tmp_path)),
      fd_(std::move(fd)),
      leaves_(BlockCount(size)),
      have_(BlockCount(size), false) {}

ChunkWriterImpl::~ChunkWriterImpl() { Abort(); }

Status ChunkWriterImpl::WriteData(uint64_t offset, const uint8_t* data, size_t len,
                                  uint64_t writeback_from) {
  Status s = PwriteFull(fd_.get(), data, len, offset, tmp_path_);
  if (!s.ok()) {
    if (s.IsNoSpace()) {
      return Status::NoSpace("disk full while writing chunk " + id_.ShortHex() + " to " +
                             tmp_path_ + "; free space on that filesystem or lower --cache-size");
    }
    return s;
  }
  const uint64_t end = offset + len;
  if (sync_ && writeback_from < end) {
    ::sync_file_range(fd_.get(), static_cast<off_t>(writeback_from),
                      static_cast<off_t>(end - writeback_from), SYNC_FILE_RANGE_WRITE);
  }
  return Status::OK();
}

Status ChunkWriterImpl::WriteAt(uint64_t offset, const uint8_t* data, size_t len) {
  if (offset % kBlockSize != 0 || len == 0 || offset > size_ || len > size_ - offset ||
      (len % kBlockSize != 0 && offset + len != size_)) {
    return Status::InvalidArgument("write of " + std::to_string(len) + " bytes at offset " +
                                   std::to_string(offset) + " to chunk " + id_.ShortHex() + " of " +
                                   std::to_string(size_) +
                                   " bytes: writes must cover whole 16 KiB blocks");
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    if (finished_) {
      return Status::InvalidArgument("write to chunk " + id_.ShortHex() +
                                     " after it was committed or aborted");
    }
  }
  Sha256 h;
  std::vector<Digest> hashes;
  for (size_t done = 0; done < len; done += kStep) {
    size_t n = len - done < kStep ? len - done : kStep;
    // A write of a step or more (a put) starts each step's writeback; one
    // of a few blocks, its window's when it ends the window.
    const uint64_t end = offset + done + n;
    uint64_t writeback_from = end;
    if (len >= kStep) {
      writeback_from = offset + done;
    } else if (end % kWritebackWindow == 0 || end == size_) {
      writeback_from = end - std::min<uint64_t>(end, kWritebackWindow);
    }
    SHOAL_RETURN_IF_ERROR(WriteData(offset + done, data + done, n, writeback_from));
    hashes.clear();
    for (size_t b = 0; b < n; b += kBlockSize) {
      hashes.push_back(h.Hash(data + done + b, n - b < kBlockSize ? n - b : kBlockSize));
    }
    std::lock_guard<std::mutex> l(mu_);
    uint64_t first = (offset + done) / kBlockSize;
    for (size_t i = 0; i < hashes.size(); ++i) {
      leaves_[first + i] = hashes[i];
      if (!have_[first + i]) {
        have_[first + i] = true;
        ++have_count_;
      }
    }
  }
  return Status::OK();
}

Status ChunkWriterImpl::WriteAllHashed(const uint8_t* data, const std::vector<Digest>& leaves) {
  if (leaves.size() != leaves_.size()) {
    return Status::InvalidArgument("chunk " + id_.ShortHex() + " of " + std::to_string(size_) +
                                   " bytes needs " + std::to_string(leaves_.size()) +
                                   " block hashes, got " + std::to_string(leaves.size()));
  }
  for (uint64_t done = 0; done < size_; done += kStep) {
    size_t n = static_cast<size_t>(size_ - done < kStep ? size_ - done : kStep);
    SHOAL_RETURN_IF_ERROR(WriteData(done, data + done, n, done));
  }
  std::lock_guard<std::mutex> l(mu_);
  leaves_ = leaves;
  have_.assign(have_.size(), true);
  have_count_ = have_.size();
  return Status::OK();
}

Result<Digest> ChunkWriterImpl::BlockHash(uint64_t index) const {
  std::lock_guard<std::mutex> l(mu_);
  if (index >= have_.size() || !have_[index]) {
    return Status::NotFound("block " + std::to_string(index) + " of chunk " + id_.ShortHex() +
                            " has not been written");
  }
  return leaves_[index];
}

uint64_t ChunkWriterImpl::blocks_written() const {
  std::lock_guard<std::mutex> l(mu_);
  return have_count_;
}

Status ChunkWriterImpl::Commit() {
  std::lock_guard<std::mutex> l(mu_);
  if (finished_) {
    return Status::InvalidArgument("commit of chunk " + id_.ShortHex() +
                                   " after it was committed or aborted");
  }
  if (have_count_ != have_.size()) {
    uint64_t first = 0;
    while (have_[first]) ++first;
    return Status::InvalidArgument("chunk " + id_.ShortHex() +
                                   " cannot commit: " + std::to_string(have_.size() - have_count_) +
                                   " of " + std::to_string(have_.size()) +
                                   " blocks are missing (first at offset " +
                                   std::to_string(first * kBlockSize) + "); write them first");
  }
  if (!ChunkIdMatches(id_, leaves_)) {
    Digest got = MerkleRoot(leaves_, NextPowerOfTwo(leaves_.size()));
    return Status::Corruption("chunk " + id_.ToHex() + ": the " + std::to_string(size_) +
                              " bytes written hash to " + got.ToHex() +
                              "; the sender sent bad data. Rewrite the bad blocks or abort");
  }
  // Drop the preallocated slack, then make the bytes durable.
  Status s;
  if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) {
    s = Status::FromErrno("truncate " + tmp_path_, errno);
  } else if (sync_ && ::fsync(fd_.get()) != 0) {
    s = Status::FromErrno("fsync " + tmp_path_, errno);
  }
  if (!s.ok()) {
    AbortLocked();
    return s;
  }
  finished_ = true;
  return store_->CommitWrite(id_, size_, owned_, tmp_path_);
}

void ChunkWriterImpl::Abort() {
  std::lock_guard<std::mutex> l(mu_);
  AbortLocked();
}

void ChunkWriterImpl::AbortLocked() {
  if (finished_) return;
  finished_ = true;
  ::unlink(tmp_path_.c_str());
  store_->AbandonWrite(size_);
}

}  // namespace shoal
