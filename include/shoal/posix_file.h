// Thin wrappers over the POSIX file calls Shoal makes: an owning
// file descriptor, full-length pread/pwrite, and folder creation and sync.
// Every failure comes back as a Status naming the path and the call.
#ifndef SHOAL_POSIX_FILE_H_
#define SHOAL_POSIX_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal {

// Owns one file descriptor and closes it on destruction. Move-only.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() { reset(); }
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC added.
Result<ScopedFd> OpenFile(const std::string& path, int flags, unsigned mode = 0644);

// Writes all `len` bytes at `offset`, retrying short writes and EINTR.
Status PwriteFull(int fd, const uint8_t* data, size_t len, uint64_t offset,
                  const std::string& path);

// Reads up to `len` bytes at `offset`; fewer only at end of file.
Result<size_t> PreadFull(int fd, uint8_t* buf, size_t len, uint64_t offset,
                         const std::string& path);

// The whole of the small file at `path`. If it is longer than `max_bytes`,
// sets *too_large and returns an empty string, so the caller can say what
// the file was meant to be.
Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes, bool* too_large);

// mkdir -p. Existing folders are fine.
Status MakeDirs(const std::string& path, unsigned mode = 0755);

// fsync of a folder, so that a rename or create inside it is durable.
Status FsyncDir(const std::string& path);

// The folder part of a path ("a/b" for "a/b/c"; "." for "c").
std::string ParentDir(const std::string& path);

}  // namespace shoal

#endif  // SHOAL_POSIX_FILE_H_
