#include "store/chunk_verify.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include "shoal/chunk_hash.h"
#include "shoal/merkle.h"
#include "shoal/posix_file.h"
#include "shoal/sha256.h"

namespace shoal {

Status VerifyChunkFile(int fd, const std::string& path, const ChunkId& id, uint64_t size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno("stat " + path, errno);
  if (static_cast<uint64_t>(st.st_size) != size) {
    return Status::Corruption("chunk file " + path + " has " + std::to_string(st.st_size) +
                              " bytes, its index record says " + std::to_string(size));
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  constexpr size_t kStep = 1u << 20;  // a multiple of kBlockSize
  std::vector<uint8_t> buf(kStep);
  std::vector<Digest> leaves;
  leaves.reserve(BlockCount(size));
  Sha256 h;
  for (uint64_t off = 0; off < size; off += kStep) {
    size_t want = static_cast<size_t>(size - off < kStep ? size - off : kStep);
    auto got = PreadFull(fd, buf.data(), want, off, path);
    if (!got.ok()) return got.status();
    if (*got != want) return Status::Corruption("chunk file " + path + " shrank while being read");
    for (size_t b = 0; b < want; b += kBlockSize) {
      size_t n = want - b < kBlockSize ? want - b : kBlockSize;
      leaves.push_back(h.Hash(buf.data() + b, n));
    }
  }
  if (!ChunkIdMatches(id, leaves)) {
    return Status::Corruption("chunk file " + path + " does not hash to its name");
  }
  return Status::OK();
}

Status VerifyChunkPath(const std::string& path, const ChunkId& id, uint64_t size) {
  auto fd = OpenFile(path, O_RDONLY);
  if (!fd.ok()) return fd.status();
  return VerifyChunkFile(fd->get(), path, id, size);
}

}  // namespace shoal
