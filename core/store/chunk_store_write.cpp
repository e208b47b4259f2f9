// ChunkStoreImpl's write path: reserving space, streaming writers, puts and
// the commit that makes a chunk visible.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "shoal/merkle.h"
#include "shoal/utc_time.h"
#include "store/chunk_store_impl.h"
#include "store/chunk_writer_impl.h"

namespace shoal {
namespace {

// Puts at least this big are written and hashed by two threads.
constexpr size_t kSplitPutBytes = 4u << 20;

}  // namespace

Result<std::unique_ptr<ChunkWriter>> ChunkStoreImpl::BeginWrite(const ChunkId& id, uint64_t size,
                                                                const ChunkWriteOptions& wo) {
  if (size == 0 || size > kMaxPieceSize) {
    return Status::InvalidArgument("chunk " + id.ShortHex() + " of " + std::to_string(size) +
                                   " bytes: a chunk holds 1 byte to 64 MiB");
  }
  std::vector<Removed> removed;
  Status s;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (table_.Find(id) != nullptr) {
      return Status::AlreadyExists("chunk " + id.ToHex() + " is already in the cache");
    }
    s = ReserveLocked(size, &removed);
    if (s.IsNoSpace()) NoteRefusalLocked(size, s.message());
  }
  FinishRemovals(removed);
  SHOAL_RETURN_IF_ERROR(s);

  std::string tmp = layout_.NewTempPath(id, "write");
  auto fd = OpenFile(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (!fd.ok()) {
    AbandonWrite(size);
    return fd.status();
  }
  // Claim the disk space now, so a full disk fails here and not halfway
  // through a download. ENOSPC evicts LRU chunks and tries again.
  for (;;) {
    if (::fallocate(fd->get(), 0, 0, static_cast<off_t>(size + kIndexSlack)) == 0) break;
    int err = errno;
    if (err == EINTR) continue;
    if (err == EOPNOTSUPP || err == ENOSYS) break;  // ENOSPC will surface on write
    uint64_t freed = 0;
    std::string full;
    if (err == ENOSPC) {
      removed.clear();
      {
        std::lock_guard<std::mutex> l(mu_);
        freed = EvictForDiskLocked(size + kIndexSlack, &removed);
        if (freed == 0) {
          full = DiskFullMessage(size);
          NoteRefusalLocked(size, full);
        }
      }
      FinishRemovals(removed);
      if (freed > 0) continue;
    }
    fd->reset();
    ::unlink(tmp.c_str());
    AbandonWrite(size);
    if (err == ENOSPC) return Status::NoSpace(full);
    return Status::FromErrno("preallocate " + tmp, err);
  }
  if (refusing_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> l(mu_);
    refusing_ = false;
  }
  return std::unique_ptr<ChunkWriter>(
      new ChunkWriterImpl(this, id, size, wo.owned,
                          options_.sync && size >= options_.sync_min_bytes, std::move(*fd), tmp));
}

Status ChunkStoreImpl::Put(const ChunkId& id, const uint8_t* data, size_t len,
                           const ChunkWriteOptions& wo) {
  auto w = BeginWrite(id, len, wo);
  if (!w.ok()) {
    if (w.status().code() == Status::Code::kAlreadyExists) {
      return wo.owned ? SetOwned(id, true) : Status::OK();
    }
    return w.status();
  }
  ChunkWriter& writer = **w;
  if (len < kSplitPutBytes) {
    SHOAL_RETURN_IF_ERROR(writer.WriteAt(0, data, len));
    return writer.Commit();
  }
  // Hashing runs at about 1.5 GB/s per core, slower than a fast disk takes
  // data, so a large put hashes its two halves on two threads.
  size_t half = static_cast<size_t>(BlockCount(len) / 2) * kBlockSize;
  Status second;
  std::thread helper([&] { second = writer.WriteAt(half, data + half, len - half); });
  Status first = writer.WriteAt(0, data, half);
  helper.join();
  SHOAL_RETURN_IF_ERROR(first);
  SHOAL_RETURN_IF_ERROR(second);
  return writer.Commit();
}

Status ChunkStoreImpl::PutHashed(const ChunkId& id, const uint8_t* data, size_t len,
                                 const std::vector<Digest>& leaves, const ChunkWriteOptions& wo) {
  auto w = BeginWrite(id, len, wo);
  if (!w.ok()) {
    if (w.status().code() == Status::Code::kAlreadyExists) {
      return wo.owned ? SetOwned(id, true) : Status::OK();
    }
    return w.status();
  }
  auto* writer = static_cast<ChunkWriterImpl*>(w->get());
  SHOAL_RETURN_IF_ERROR(writer->WriteAllHashed(data, leaves));
  return writer->Commit();
}

Status ChunkStoreImpl::CommitWrite(const ChunkId& id, uint64_t size, bool owned,
                                   const std::string& tmp_path) {
  std::string folder = layout_.ChunkFolder(id);
  Status s = MakeDirs(folder, 0700);
  if (!s.ok()) {
    ::unlink(tmp_path.c_str());
    AbandonWrite(size);
    return s;
  }
  std::string path = layout_.ChunkPath(id);
  {
    std::lock_guard<std::mutex> l(mu_);
    reserved_bytes_ -= size;
    --writes_in_flight_;
    ChunkEntry* e = table_.Find(id);
    if (e != nullptr) {
      // Another writer committed the same chunk first; keep its file.
      ::unlink(tmp_path.c_str());
      if (owned && !e->owned) {
        table_.SetOwned(e, true);
        ++owned_chunks_;
        if (!index_->Put(id, RecordOf(*e)).ok()) ++counters_.index_errors;
      }
      return Status::OK();
    }
    if (::rename(tmp_path.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp_path.c_str());
      ++counters_.write_failures;
      return Status::FromErrno("rename " + tmp_path + " to " + path, err);
    }
    e = table_.Insert(id, size, NowMs(), owned, /*verified=*/true);
    e->file_ctime_ns = PathChangeTimeNs(path);
    used_bytes_ += size;
    if (owned) ++owned_chunks_;
    counters_.bytes_in += size;
    if (!index_->Put(id, RecordOf(*e)).ok()) ++counters_.index_errors;
  }
  // The folder is not fsynced: a power cut may lose the rename of a chunk
  // committed just before it, which costs a refetch, never a bad chunk.
  return Status::OK();
}

void ChunkStoreImpl::AbandonWrite(uint64_t size) {
  std::lock_guard<std::mutex> l(mu_);
  reserved_bytes_ -= size;
  --writes_in_flight_;
  ++counters_.write_failures;
}

}  // namespace shoal
