// ChunkStoreImpl::Materialize: assemble a file from cached chunks.
//
// Each chunk is copied with CopyFileRange (shoal/file_copy.h), in the
// kernel where the filesystems allow.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <vector>

#include "shoal/file_copy.h"
#include "shoal/piece_hasher.h"
#include "store/chunk_store_impl.h"

namespace shoal {

Status ChunkStoreImpl::Materialize(const std::vector<ChunkId>& chunks, uint64_t file_size,
                                   uint32_t piece_size, const std::string& target_path,
                                   uint32_t mode) {
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(piece_size));
  uint64_t want_chunks = (file_size + piece_size - 1) / piece_size;
  if (chunks.size() != want_chunks) {
    return Status::InvalidArgument(
        "materialize " + target_path + ": a " + std::to_string(file_size) + "-byte file in " +
        std::to_string(piece_size) + "-byte pieces has " + std::to_string(want_chunks) +
        " chunks, got " + std::to_string(chunks.size()));
  }
  if ((mode & ~07777u) != 0) {
    return Status::InvalidArgument("materialize " + target_path + ": mode " + std::to_string(mode) +
                                   " has bits outside 07777");
  }

  // Pin every chunk before writing anything, so none is evicted midway. A
  // pin holds no file descriptor; files are opened one at a time below.
  std::vector<OpenChunk> pinned;
  pinned.reserve(chunks.size());
  auto which = [&](size_t i) {
    return "materialize " + target_path + ": chunk " + std::to_string(i) + " of " +
           std::to_string(chunks.size());
  };
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto c = PinChunk(chunks[i], VerifyMode::kFirstRead);
    if (!c.ok()) {
      return Status::NotFound(which(i) + " (" + chunks[i].ShortHex() +
                              ") is not in the cache; pull it first");
    }
    uint64_t expect = std::min<uint64_t>(piece_size, file_size - i * uint64_t{piece_size});
    if (c->size != expect) {
      return Status::InvalidArgument(which(i) + " has " + std::to_string(c->size) +
                                     " bytes; that place in the file needs " +
                                     std::to_string(expect));
    }
    pinned.push_back(std::move(*c));
  }

  std::string parent = ParentDir(target_path);
  SHOAL_RETURN_IF_ERROR(MakeDirs(parent));
  static std::atomic<uint64_t> seq{0};
  std::string tmp = target_path + ".shoal-tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(seq.fetch_add(1));
  auto out = OpenFile(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (!out.ok()) return out.status();

  auto write_all = [&]() -> Status {
    for (size_t i = 0; i < pinned.size(); ++i) {
      OpenChunk& c = pinned[i];
      Status opened = OpenChunkFile(chunks[i], &c);  // verifies on first read since open
      if (!opened.ok()) return opened.WithContext(which(i));
      SHOAL_RETURN_IF_ERROR(
          CopyFileRange(c.fd.get(), 0, out->get(), i * uint64_t{piece_size}, c.size, tmp));
      c = OpenChunk();  // closes the file and drops the pin
    }
    if (::fchmod(out->get(), mode & ~0222u) != 0) return Status::FromErrno("chmod " + tmp, errno);
    if (::fsync(out->get()) != 0) return Status::FromErrno("fsync " + tmp, errno);
    out->reset();
    if (::rename(tmp.c_str(), target_path.c_str()) != 0) {
      return Status::FromErrno("rename " + tmp + " to " + target_path, errno);
    }
    return FsyncDir(parent);
  };
  Status s = write_all();
  if (!s.ok()) {
    out->reset();
    ::unlink(tmp.c_str());
    return s.IsNoSpace() ? Status::NoSpace(s.message() + "; free space under " + parent) : s;
  }
  bytes_out_.fetch_add(file_size, std::memory_order_relaxed);
  return Status::OK();
}

}  // namespace shoal
