#include "shoal/secret_file.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "shoal/hash256.h"
#include "shoal/posix_file.h"

namespace shoal {
namespace {

// Secret files are tiny; anything larger is not one of ours.
constexpr off_t kMaxSecretBytes = 64 * 1024;

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", unsigned(mode & 07777));
  return buf;
}

}  // namespace

Result<std::string> ReadSecretFile(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("cannot open secret file " + path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    return Status::FromErrno("cannot stat secret file " + path, errno);
  if (!S_ISREG(st.st_mode)) {
    return Status::PermissionDenied("secret file " + path + " is not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    return Status::PermissionDenied("secret file " + path +
                                    " is readable by group or others (mode " + Octal(st.st_mode) +
                                    "); run 'chmod 600 " + path + "'");
  }
  if (st.st_size > kMaxSecretBytes) {
    return Status::InvalidArgument("secret file " + path + " is larger than 64 KiB");
  }
  std::string data(size_t(st.st_size), '\0');
  Result<size_t> got = PreadFull(fd.get(), reinterpret_cast<uint8_t*>(&data[0]), data.size(), 0,
                                 "secret file " + path);
  if (!got.ok()) return got.status();
  if (*got < data.size()) return Status::FromErrno("cannot read secret file " + path, EIO);
  return data;
}

Status CreateSecretFile(const std::string& path, const std::string& contents) {
  uint8_t nonce[8];
  if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
    return Status::IOError("cannot draw random bytes for a temporary file name");
  }
  std::string tmp = path + ".tmp-" + hex::Encode(nonce, sizeof(nonce));
  ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::FromErrno("cannot create " + tmp, errno);
  Status s = PwriteFull(fd.get(), reinterpret_cast<const uint8_t*>(contents.data()),
                        contents.size(), 0, tmp);
  if (s.ok() && ::fsync(fd.get()) != 0) s = Status::FromErrno("cannot fsync " + tmp, errno);
  fd.reset();
  if (s.ok() && ::link(tmp.c_str(), path.c_str()) != 0) {
    if (errno == EEXIST) {
      s = Status::AlreadyExists(path + " was created concurrently");
    } else {
      s = Status::FromErrno("cannot move " + tmp + " into place as " + path, errno);
    }
  }
  ::unlink(tmp.c_str());
  if (!s.ok()) return s;
  return FsyncDir(ParentDir(path));
}

}  // namespace shoal
