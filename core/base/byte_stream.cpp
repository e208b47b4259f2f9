#include "shoal/byte_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace shoal {

Result<std::unique_ptr<FileSource>> FileSource::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno("stat " + path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(path + " is not a regular file");
  }
  return std::unique_ptr<FileSource>(new FileSource(fd, static_cast<uint64_t>(st.st_size), path));
}

FileSource::~FileSource() { ::close(fd_); }

Result<size_t> FileSource::Read(uint8_t* buf, size_t cap) {
  for (;;) {
    ssize_t n = ::read(fd_, buf, cap);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR) return Status::FromErrno("read " + path_, errno);
  }
}

Result<size_t> ReadFull(ByteSource& source, uint8_t* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    Result<size_t> n = source.Read(buf + got, len - got);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    got += *n;
  }
  return got;
}

}  // namespace shoal
