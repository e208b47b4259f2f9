#include "shoal/peer_cert.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <ctime>

#include "shoal/openssl_ptr.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

// A CA certificate is valid from this long before it is made.
constexpr int64_t kCaBackdateMs = 60 * 60 * 1000;

// The oldest queued OpenSSL error as text, clearing the queue: OpenSSL's
// failures are answers here, and must not linger for the next caller.
std::string TakeOpensslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no OpenSSL detail";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

BioPtr ReadBio(std::string_view text) {
  return BioPtr(BIO_new_mem_buf(text.data(), int(text.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, size_t(len));
}

Result<X509Ptr> ParseCert(std::string_view pem, const char* what) {
  BioPtr bio = ReadBio(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) {
    return Status::InvalidArgument(std::string(what) +
                                   " is not a PEM certificate: " + TakeOpensslError());
  }
  return cert;
}

PkeyPtr ParsePrivateKey(std::string_view pem) {
  BioPtr bio = ReadBio(pem);
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) ERR_clear_error();
  return key;
}

bool IsP256(EVP_PKEY* key) {
  char group[64];
  size_t len = 0;
  return EVP_PKEY_is_a(key, "EC") &&
         EVP_PKEY_get_group_name(key, group, sizeof(group), &len) == 1 &&
         std::strcmp(group, "prime256v1") == 0;
}

int64_t FloorSeconds(int64_t ms) { return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000); }

Result<int64_t> AsnTimeMs(const ASN1_TIME* t) {
  struct tm tm {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
    ERR_clear_error();
    return Status::Corruption("certificate has an unreadable validity time");
  }
  return int64_t(timegm(&tm)) * 1000;
}

Status CheckName(std::string_view name, const char* what) {
  if (name.empty() || name.size() > kMaxPeerCertSubjectBytes) {
    return Status::InvalidArgument(std::string(what) + " must be 1 to 64 bytes, got " +
                                   std::to_string(name.size()));
  }
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Status::InvalidArgument(std::string(what) + " holds a control character");
    }
  }
  return Status::OK();
}

// A v3 certificate for `key` with subject CN=`cn`, a random 128-bit serial
// and the given validity, not yet signed and without extensions.
Result<X509Ptr> NewCert(EVP_PKEY* key, std::string_view cn, int64_t not_before_ms,
                        int64_t not_after_ms) {
  X509Ptr cert(X509_new());
  uint8_t serial[16];
  if (!cert || RAND_bytes(serial, sizeof(serial)) != 1) {
    return Status::IOError("OpenSSL could not start a certificate: " + TakeOpensslError());
  }
  BnPtr serial_bn(BN_bin2bn(serial, sizeof(serial), nullptr));
  X509_NAME* name = X509_get_subject_name(cert.get());
  bool ok = serial_bn && X509_set_version(cert.get(), X509_VERSION_3) == 1 &&
            BN_to_ASN1_INTEGER(serial_bn.get(), X509_get_serialNumber(cert.get())) != nullptr &&
            X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                                       reinterpret_cast<const unsigned char*>(cn.data()),
                                       int(cn.size()), -1, 0) == 1 &&
            ASN1_TIME_set(X509_getm_notBefore(cert.get()), time_t(FloorSeconds(not_before_ms))) &&
            ASN1_TIME_set(X509_getm_notAfter(cert.get()), time_t(FloorSeconds(not_after_ms))) &&
            X509_set_pubkey(cert.get(), key) == 1;
  if (!ok) {
    return Status::InvalidArgument("cannot build a certificate for CN \"" + std::string(cn) +
                                   "\": " + TakeOpensslError());
  }
  return cert;
}

// Adds one extension, written in OpenSSL's configuration syntax.
bool AddExtension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  X509ExtPtr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

Result<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return Status::IOError("OpenSSL could not encode a certificate as PEM: " + TakeOpensslError());
  }
  return BioText(bio.get());
}

Result<std::string> PrivateKeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Status::IOError("OpenSSL could not encode a private key as PEM: " + TakeOpensslError());
  }
  return BioText(bio.get());
}

Result<PkeyPtr> NewP256Key() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return Status::IOError("OpenSSL could not generate a P-256 key: " + TakeOpensslError());
  return key;
}

// A self-signed CA certificate for `key`.
Result<X509Ptr> NewCaCert(EVP_PKEY* key, std::string_view cn, int64_t now_ms, int64_t ttl_ms) {
  Result<X509Ptr> cert = NewCert(key, cn, now_ms - kCaBackdateMs, now_ms + ttl_ms);
  if (!cert.ok()) return cert.status();
  X509* x = cert->get();
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  bool ok = X509_set_issuer_name(x, X509_get_subject_name(x)) == 1 &&
            AddExtension(x, &ctx, NID_basic_constraints, "critical,CA:TRUE") &&
            AddExtension(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") &&
            AddExtension(x, &ctx, NID_subject_key_identifier, "hash") &&
            X509_sign(x, key, EVP_sha256()) > 0;
  if (!ok)
    return Status::IOError("OpenSSL could not sign the CA certificate: " + TakeOpensslError());
  return cert;
}

}  // namespace

Result<PeerKey> GeneratePeerKey() {
  Result<PkeyPtr> key = NewP256Key();
  if (!key.ok()) return key.status();
  PeerKey out;
  Result<std::string> private_pem = PrivateKeyPem(key->get());
  if (!private_pem.ok()) return private_pem.status();
  out.private_key_pem = std::move(*private_pem);
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key->get()) != 1) {
    return Status::IOError("OpenSSL could not encode a public key as PEM: " + TakeOpensslError());
  }
  out.public_key_pem = BioText(bio.get());
  return out;
}

PeerCa::PeerCa(EVP_PKEY* key, X509* cert, std::string cert_pem)
    : key_(key), cert_(cert), cert_pem_(std::move(cert_pem)) {
  // Fills the certificate's cached extension fields now, so that Issue only
  // ever reads the CA certificate, from any thread.
  (void)X509_check_ca(cert_);
}

PeerCa::~PeerCa() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

Result<std::unique_ptr<PeerCa>> PeerCa::Create(std::string_view common_name, int64_t now_ms,
                                               int64_t ttl_ms) {
  SHOAL_RETURN_IF_ERROR(CheckName(common_name, "a peer CA name"));
  if (ttl_ms <= 0) return Status::InvalidArgument("a peer CA lifetime must be positive");
  Result<PkeyPtr> key = NewP256Key();
  if (!key.ok()) return key.status();
  Result<X509Ptr> cert = NewCaCert(key->get(), common_name, now_ms, ttl_ms);
  if (!cert.ok()) return cert.status();
  Result<std::string> pem = CertPem(cert->get());
  if (!pem.ok()) return pem.status();
  return std::unique_ptr<PeerCa>(new PeerCa(key->release(), cert->release(), std::move(*pem)));
}

Result<std::unique_ptr<PeerCa>> PeerCa::FromPem(std::string_view key_pem,
                                                std::string_view cert_pem) {
  PkeyPtr key = ParsePrivateKey(key_pem);
  if (!key || !IsP256(key.get())) {
    ERR_clear_error();
    return Status::Corruption("the key is not a PEM EC P-256 private key");
  }
  Result<X509Ptr> cert = ParseCert(cert_pem, "the certificate");
  if (!cert.ok()) return Status::Corruption(cert.status().message());
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    ERR_clear_error();
    return Status::Corruption("the certificate is not the key's");
  }
  if (X509_check_ca(cert->get()) == 0) {
    return Status::Corruption("the certificate is not a CA certificate");
  }
  Result<std::string> pem = CertPem(cert->get());  // canonical, whatever surrounded it
  if (!pem.ok()) return pem.status();
  return std::unique_ptr<PeerCa>(new PeerCa(key.release(), cert->release(), std::move(*pem)));
}

Result<std::string> PeerCa::KeyPem() const { return PrivateKeyPem(key_); }

Result<IssuedCert> PeerCa::Issue(std::string_view public_key_pem, std::string_view subject,
                                 int64_t now_ms, int64_t ttl_ms) const {
  SHOAL_RETURN_IF_ERROR(CheckName(subject, "a peer certificate subject"));
  if (ttl_ms <= 0) return Status::InvalidArgument("a peer certificate lifetime must be positive");
  BioPtr bio = ReadBio(public_key_pem);
  PkeyPtr peer_key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!peer_key) {
    return Status::InvalidArgument("peer public key is not a PEM public key: " +
                                   TakeOpensslError());
  }
  if (!IsP256(peer_key.get())) {
    ERR_clear_error();
    return Status::InvalidArgument("peer public key is not an EC P-256 key");
  }

  Result<X509Ptr> cert =
      NewCert(peer_key.get(), subject, now_ms - kPeerCertClockSkewMs, now_ms + ttl_ms);
  if (!cert.ok()) return cert.status();
  X509* x = cert->get();
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert_, x, nullptr, nullptr, 0);
  bool ok = X509_set_issuer_name(x, X509_get_subject_name(cert_)) == 1 &&
            AddExtension(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
            AddExtension(x, &ctx, NID_key_usage, "critical,digitalSignature,keyAgreement") &&
            AddExtension(x, &ctx, NID_ext_key_usage, "serverAuth,clientAuth") &&
            AddExtension(x, &ctx, NID_subject_alt_name, "DNS:*") &&
            AddExtension(x, &ctx, NID_authority_key_identifier, "keyid:always") &&
            X509_sign(x, key_, EVP_sha256()) > 0;
  if (!ok) {
    return Status::IOError("OpenSSL could not sign a peer certificate: " + TakeOpensslError());
  }
  IssuedCert out;
  Result<std::string> pem = CertPem(x);
  Result<int64_t> not_before = AsnTimeMs(X509_get0_notBefore(x));
  Result<int64_t> not_after = AsnTimeMs(X509_get0_notAfter(x));
  if (!pem.ok()) return pem.status();
  if (!not_before.ok()) return not_before.status();
  if (!not_after.ok()) return not_after.status();
  out.cert_pem = std::move(*pem);
  out.not_before_ms = *not_before;
  out.not_after_ms = *not_after;
  return out;
}

Result<int64_t> VerifyPeerCert(std::string_view cert_pem, std::string_view ca_pem, int64_t now_ms) {
  Result<X509Ptr> cert = ParseCert(cert_pem, "peer certificate");
  if (!cert.ok()) return cert.status();
  Result<X509Ptr> ca = ParseCert(ca_pem, "peer CA certificate");
  if (!ca.ok()) return ca.status();
  if (X509_check_ca(cert->get()) != 0) {
    return Status::PermissionDenied("peer certificate is a CA certificate, not a peer's");
  }

  X509StorePtr store(X509_STORE_new());
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca->get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert->get(), nullptr) != 1) {
    return Status::IOError("OpenSSL could not set up certificate verification: " +
                           TakeOpensslError());
  }
  // Sets X509_V_FLAG_USE_CHECK_TIME: validity is judged at now_ms.
  X509_STORE_CTX_set_time(ctx.get(), 0, time_t(FloorSeconds(now_ms)));
  if (X509_verify_cert(ctx.get()) == 1) return AsnTimeMs(X509_get0_notAfter(cert->get()));

  const int err = X509_STORE_CTX_get_error(ctx.get());
  X509* failed = X509_STORE_CTX_get_current_cert(ctx.get());
  ERR_clear_error();
  const std::string who =
      X509_STORE_CTX_get_error_depth(ctx.get()) == 0 ? "peer certificate" : "peer CA certificate";
  if (failed == nullptr) failed = cert->get();
  switch (err) {
    case X509_V_ERR_CERT_HAS_EXPIRED: {
      Result<int64_t> at = AsnTimeMs(X509_get0_notAfter(failed));
      return Status::PermissionDenied(who + " expired at " +
                                      (at.ok() ? FormatUtcMillis(*at) : "an unreadable time"));
    }
    case X509_V_ERR_CERT_NOT_YET_VALID: {
      Result<int64_t> at = AsnTimeMs(X509_get0_notBefore(failed));
      return Status::PermissionDenied(who + " is not yet valid until " +
                                      (at.ok() ? FormatUtcMillis(*at) : "an unreadable time") +
                                      "; check this host's clock");
    }
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return Status::PermissionDenied("peer certificate is not signed by this CA");
    default:
      return Status::PermissionDenied(who +
                                      " does not verify: " + X509_verify_cert_error_string(err));
  }
}

Result<int64_t> CertNotAfterMs(std::string_view cert_pem) {
  Result<X509Ptr> cert = ParseCert(cert_pem, "certificate");
  if (!cert.ok()) return cert.status();
  return AsnTimeMs(X509_get0_notAfter(cert->get()));
}

bool CertMatchesKey(std::string_view cert_pem, std::string_view private_key_pem) {
  Result<X509Ptr> cert = ParseCert(cert_pem, "certificate");
  PkeyPtr key = ParsePrivateKey(private_key_pem);
  bool match = cert.ok() && key && X509_check_private_key(cert->get(), key.get()) == 1;
  ERR_clear_error();
  return match;
}

}  // namespace shoal
