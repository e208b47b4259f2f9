// ChunkStoreImpl::Materialize: assemble a file from cached chunks.
//
// copy_file_range lets the kernel copy between files without bringing the
// bytes to user space, and lets a reflink-capable filesystem (XFS, Btrfs)
// share extents instead of copying. Across filesystems, or where the call
// is missing, it falls back to pread/pwrite.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <vector>

#include "chunk_store_impl.h"
#include "shoal/piece_hasher.h"

namespace shoal {
namespace {

// Copies `len` bytes of `src` from `offset` to `dst` at `dst_base + offset`.
Status CopyByReadWrite(int src, int dst, uint64_t dst_base, uint64_t offset, uint64_t len,
                       const std::string& target) {
  constexpr size_t kStep = 1u << 20;
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(len - offset, kStep)));
  while (offset < len) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(len - offset, kStep));
    auto got = PreadFull(src, buf.data(), want, offset, target);
    if (!got.ok()) return got.status();
    if (*got != want) return Status::Corruption("a chunk file shrank while copied to " + target);
    SHOAL_RETURN_IF_ERROR(PwriteFull(dst, buf.data(), want, dst_base + offset, target));
    offset += want;
  }
  return Status::OK();
}

// Copies the `len`-byte chunk file `src` into `dst` at `dst_base`. Sets
// *kernel_copy false for the rest of the file once copy_file_range is
// found unsupported between these two files.
Status CopyChunk(int src, int dst, uint64_t dst_base, uint64_t len, bool* kernel_copy,
                 const std::string& target) {
  uint64_t done = 0;
  while (*kernel_copy && done < len) {
    loff_t in = static_cast<loff_t>(done);
    loff_t out = static_cast<loff_t>(dst_base + done);
    ssize_t n = ::copy_file_range(src, &in, dst, &out, static_cast<size_t>(len - done), 0);
    if (n > 0) {
      done += static_cast<uint64_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n == 0 || errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP ||
               errno == EINVAL) {
      *kernel_copy = false;
    } else {
      return Status::FromErrno("copy a chunk into " + target, errno);
    }
  }
  if (done == len) return Status::OK();
  return CopyByReadWrite(src, dst, dst_base, done, len, target);
}

}  // namespace

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
    bool kernel_copy = true;
    for (size_t i = 0; i < pinned.size(); ++i) {
      OpenChunk& c = pinned[i];
      Status opened = OpenChunkFile(chunks[i], &c);  // verifies on first read since open
      if (!opened.ok()) return opened.WithContext(which(i));
      SHOAL_RETURN_IF_ERROR(
          CopyChunk(c.fd.get(), out->get(), i * uint64_t{piece_size}, c.size, &kernel_copy, tmp));
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
