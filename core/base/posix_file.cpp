#include "shoal/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace shoal {

void ScopedFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<ScopedFd> OpenFile(const std::string& path, int flags, unsigned mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  return ScopedFd(fd);
}

Status PwriteFull(int fd, const uint8_t* data, size_t len, uint64_t offset,
                  const std::string& path) {
  while (len > 0) {
    ssize_t n = ::pwrite(fd, data, len, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("write " + path, errno);
    }
    data += n;
    len -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

Result<size_t> PreadFull(int fd, uint8_t* buf, size_t len, uint64_t offset,
                         const std::string& path) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("read " + path, errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes, bool* too_large) {
  *too_large = false;
  Result<ScopedFd> fd = OpenFile(path, O_RDONLY);
  if (!fd.ok()) return fd.status();
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return Status::FromErrno("cannot stat " + path, errno);
  if (uint64_t(st.st_size) > max_bytes) {
    *too_large = true;
    return std::string();
  }
  std::string text(size_t(st.st_size), '\0');
  Result<size_t> got =
      PreadFull(fd->get(), reinterpret_cast<uint8_t*>(&text[0]), text.size(), 0, path);
  if (!got.ok()) return got.status();
  text.resize(*got);
  return text;
}

Status MakeDirs(const std::string& path, unsigned mode) {
  if (path.empty()) return Status::OK();
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::OK();
    return Status::InvalidArgument(path + " exists and is not a folder");
  }
  std::string parent = ParentDir(path);
  if (parent != path && parent != "." && parent != "/")
    SHOAL_RETURN_IF_ERROR(MakeDirs(parent, mode));
  if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
    return Status::FromErrno("create folder " + path, errno);
  }
  return Status::OK();
}

Status FsyncDir(const std::string& path) {
  auto fd = OpenFile(path, O_RDONLY | O_DIRECTORY);
  if (!fd.ok()) return fd.status();
  if (::fsync(fd->get()) != 0) return Status::FromErrno("fsync folder " + path, errno);
  return Status::OK();
}

std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace shoal
