#include "shoal/tls_files.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <vector>

#include "shoal/openssl_ptr.h"
#include "shoal/posix_file.h"
#include "shoal/secret_file.h"

namespace shoal {
namespace {

// A chain of a few certificates is a few KiB; a CA bundle can be larger.
constexpr uint64_t kMaxPemFileBytes = 1 << 20;

Result<std::string> ReadPemFile(const std::string& path) {
  bool too_large = false;
  Result<std::string> text = ReadSmallFile(path, kMaxPemFileBytes, &too_large);
  if (too_large) {
    return Status::InvalidArgument(path + " is larger than 1 MiB; it is not a PEM certificate");
  }
  return text;
}

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), int(text.size())));
}

// The certificates in `pem`, in order; empty if none parses.
std::vector<X509Ptr> ParseCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemoryBio(pem);
  if (!bio) return certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the read that ended the loop left an error queued
  return certs;
}

}  // namespace

Result<TlsServerPem> LoadTlsServerPem(const std::string& cert_file, const std::string& key_file) {
  TlsServerPem pem;
  Result<std::string> chain = ReadPemFile(cert_file);
  if (!chain.ok()) return chain.status().WithContext("TLS certificate");
  pem.cert_chain = std::move(chain).value();
  Result<std::string> key = ReadSecretFile(key_file);
  if (!key.ok()) return key.status().WithContext("TLS key");
  pem.key = std::move(key).value();

  std::vector<X509Ptr> certs = ParseCertificates(pem.cert_chain);
  if (certs.empty()) {
    return Status::InvalidArgument("TLS certificate " + cert_file + " holds no PEM certificate");
  }
  BioPtr key_bio = MemoryBio(pem.key);
  PkeyPtr pkey(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr)
                       : nullptr);
  ERR_clear_error();
  if (!pkey) {
    return Status::InvalidArgument("TLS key " + key_file +
                                   " is not an unencrypted PEM private key");
  }
  if (X509_check_private_key(certs.front().get(), pkey.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("TLS key " + key_file +
                                   " does not belong to the first certificate in " + cert_file);
  }
  return pem;
}

Result<std::string> LoadTlsCaPem(const std::string& ca_file) {
  Result<std::string> pem = ReadPemFile(ca_file);
  if (!pem.ok()) return pem.status().WithContext("TLS CA file");
  if (ParseCertificates(*pem).empty()) {
    return Status::InvalidArgument("TLS CA file " + ca_file + " holds no PEM certificate");
  }
  return pem;
}

}  // namespace shoal
