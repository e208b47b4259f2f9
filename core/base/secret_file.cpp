#include "shoal/secret_file.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "shoal/hash256.h"

namespace shoal {
namespace {

// Secret files are tiny; anything larger is not one of ours.
constexpr off_t kMaxSecretBytes = 64 * 1024;

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", unsigned(mode & 07777));
  return buf;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteAll(int fd, const std::string& data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("cannot write " + what, errno);
    }
    done += size_t(n);
  }
  return Status::OK();
}

}  // namespace

Result<std::string> ReadSecretFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open secret file " + path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno("cannot stat secret file " + path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::PermissionDenied("secret file " + path + " is not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return Status::PermissionDenied("secret file " + path +
                                    " is readable by group or others (mode " + Octal(st.st_mode) +
                                    "); run 'chmod 600 " + path + "'");
  }
  if (st.st_size > kMaxSecretBytes) {
    ::close(fd);
    return Status::InvalidArgument("secret file " + path + " is larger than 64 KiB");
  }
  std::string data(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, &data[done], data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      return Status::FromErrno("cannot read secret file " + path, err);
    }
    done += size_t(n);
  }
  ::close(fd);
  return data;
}

Status CreateSecretFile(const std::string& path, const std::string& contents) {
  uint8_t nonce[8];
  if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
    return Status::IOError("cannot draw random bytes for a temporary file name");
  }
  std::string tmp = path + ".tmp-" + hex::Encode(nonce, sizeof(nonce));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("cannot create " + tmp, errno);
  Status s = WriteAll(fd, contents, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = Status::FromErrno("cannot fsync " + tmp, errno);
  ::close(fd);
  if (s.ok() && ::link(tmp.c_str(), path.c_str()) != 0) {
    if (errno == EEXIST) {
      s = Status::AlreadyExists(path + " was created concurrently");
    } else {
      s = Status::FromErrno("cannot move " + tmp + " into place as " + path, errno);
    }
  }
  ::unlink(tmp.c_str());
  if (!s.ok()) return s;
  std::string dir = DirName(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Status::FromErrno("cannot open directory " + dir, errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0) return Status::FromErrno("cannot fsync directory " + dir, err);
  return Status::OK();
}

}  // namespace shoal
