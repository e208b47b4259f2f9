// The peer CA's two files in the tracker's data folder: PeerCa::LoadOrCreate.
#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "shoal/hex.h"
#include "shoal/peer_cert.h"
#include "shoal/posix_file.h"
#include "shoal/secret_file.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

constexpr int64_t kCaLifetimeMs = int64_t(3653) * 24 * 60 * 60 * 1000;  // 10 years
constexpr char kCaKeyFile[] = "peer-ca.key";
constexpr char kCaCertFile[] = "peer-ca.pem";
// PEM certificates are a few hundred bytes; anything this large is not ours.
constexpr uint64_t kMaxCertFileBytes = 64 * 1024;

bool FileExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Result<std::string> ReadCertFile(const std::string& path) {
  bool too_large = false;
  Result<std::string> text = ReadSmallFile(path, kMaxCertFileBytes, &too_large);
  if (too_large) {
    return Status::Corruption(path + " is larger than 64 KiB; it is not a peer CA certificate");
  }
  return text;
}

// Writes a public file atomically: a temporary file beside it, fsynced, then
// renamed into place, and the folder fsynced.
Status WritePublicFile(const std::string& path, const std::string& contents) {
  uint8_t nonce[8];
  if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
    return Status::IOError("cannot draw random bytes for a temporary file name");
  }
  std::string tmp = path + ".tmp-" + hex::Encode(nonce, sizeof(nonce));
  Result<ScopedFd> fd = OpenFile(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!fd.ok()) return fd.status();
  Status s = PwriteFull(fd->get(), reinterpret_cast<const uint8_t*>(contents.data()),
                        contents.size(), 0, tmp);
  // The umask may have narrowed the mode; the CA certificate is public.
  if (s.ok() && ::fchmod(fd->get(), 0644) != 0) s = Status::FromErrno("cannot chmod " + tmp, errno);
  if (s.ok() && ::fsync(fd->get()) != 0) s = Status::FromErrno("cannot fsync " + tmp, errno);
  fd->reset();
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FromErrno("cannot rename " + tmp + " to " + path, errno);
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return FsyncDir(ParentDir(path));
}

}  // namespace

Result<std::unique_ptr<PeerCa>> PeerCa::LoadOrCreate(const std::string& dir) {
  const std::string key_path = dir + "/" + kCaKeyFile;
  const std::string cert_path = dir + "/" + kCaCertFile;
  const bool have_key = FileExists(key_path);
  const bool have_cert = FileExists(cert_path);
  if (have_key != have_cert) {
    const std::string& present = have_key ? key_path : cert_path;
    const std::string& missing = have_key ? cert_path : key_path;
    return Status::InvalidArgument(
        "peer CA file " + present + " exists but " + missing +
        " does not; restore the missing file from a backup, or delete " + present +
        " to create a new CA (every agent then needs a new certificate)");
  }

  if (!have_key) {
    uint8_t id[8];
    if (RAND_bytes(id, sizeof(id)) != 1) {
      return Status::IOError("cannot draw random bytes for the peer CA name");
    }
    Result<std::unique_ptr<PeerCa>> ca =
        Create("Shoal peer CA " + hex::Encode(id, sizeof(id)), NowMs(), kCaLifetimeMs);
    if (!ca.ok()) return ca.status();
    Result<std::string> key_pem = (*ca)->KeyPem();
    if (!key_pem.ok()) return key_pem.status();
    // The key goes first: a crash in between leaves a key without a
    // certificate, which the check above reports.
    Status created = CreateSecretFile(key_path, *key_pem);
    if (created.code() == Status::Code::kAlreadyExists) {
      return Status::Unavailable("another process is creating the peer CA in " + dir +
                                 "; try again");
    }
    SHOAL_RETURN_IF_ERROR(created);
    SHOAL_RETURN_IF_ERROR(WritePublicFile(cert_path, (*ca)->cert_pem()));
    return ca;
  }

  Result<std::string> key_pem = ReadSecretFile(key_path);
  if (!key_pem.ok()) return key_pem.status();
  Result<std::string> cert_pem = ReadCertFile(cert_path);
  if (!cert_pem.ok()) return cert_pem.status();
  Result<std::unique_ptr<PeerCa>> ca = FromPem(*key_pem, *cert_pem);
  if (!ca.ok()) return ca.status().WithContext("peer CA " + cert_path + " and " + key_path);
  Result<int64_t> not_after = CertNotAfterMs(*cert_pem);
  if (!not_after.ok()) return not_after.status();
  if (*not_after <= NowMs()) {
    return Status::PermissionDenied("peer CA certificate " + cert_path + " expired at " +
                                    FormatUtcMillis(*not_after) + "; delete " + cert_path +
                                    " and " + key_path + " to create a new CA");
  }
  return ca;
}

}  // namespace shoal
