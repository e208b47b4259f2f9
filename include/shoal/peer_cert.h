// Peer certificates: how agents prove to each other that they belong to the
// cluster.
//
// Peers are admitted by certificate alone. The tracker holds the cluster's
// peer CA and issues each agent a short-lived leaf certificate for a key pair
// the agent generated itself; the private key never leaves the agent. A peer
// checks the other side's leaf against the CA (signature and validity times)
// and then matches the leaf's subjectAltName DNS names, or failing that its
// CN, against the torrent name by prefix. Every leaf therefore carries the
// single DNS name "*", which matches every torrent, and CN = the agent ID.
//
// All keys are EC P-256 and all signatures ECDSA with SHA-256. Keys and
// certificates travel as PEM text. Certificate times have whole-second
// precision; the millisecond times below are rounded down to a second.
#ifndef SHOAL_PEER_CERT_H_
#define SHOAL_PEER_CERT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shoal/status.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY
struct x509_st;      // OpenSSL's X509

namespace shoal {

// A leaf is valid from this long before the time it is issued at, so that a
// peer whose clock runs behind the tracker's still accepts it.
constexpr int64_t kPeerCertClockSkewMs = 5 * 60 * 1000;
// The longest subject (CN) a certificate may carry, in bytes (X.509's limit).
constexpr size_t kMaxPeerCertSubjectBytes = 64;

// An agent's key pair: EC P-256, the private key as PKCS#8 PEM
// ("BEGIN PRIVATE KEY") and the public key as SubjectPublicKeyInfo PEM
// ("BEGIN PUBLIC KEY").
struct PeerKey {
  std::string private_key_pem;
  std::string public_key_pem;
};

// A fresh key pair from OpenSSL's random generator.
Result<PeerKey> GeneratePeerKey();

// A leaf certificate and its validity window, in ms since the epoch.
struct IssuedCert {
  std::string cert_pem;
  int64_t not_before_ms = 0;
  int64_t not_after_ms = 0;
};

// The cluster's peer certificate authority: a CA key and its self-signed
// certificate (basicConstraints critical CA:TRUE, keyUsage critical
// keyCertSign+cRLSign, a subjectKeyIdentifier).
//
// Thread-safety: immutable after construction; Issue may be called from any
// number of threads at once.
class PeerCa {
 public:
  // Reads <dir>/peer-ca.key (PKCS#8 PEM; refused unless only its owner may
  // read it, see ReadSecretFile) and <dir>/peer-ca.pem, or creates both if
  // neither exists: a new key (mode 0600, atomically, via CreateSecretFile)
  // and a certificate with CN "Shoal peer CA <16 random hex digits>", valid
  // from an hour ago for 10 years (mode 0644, written to a temporary file
  // and renamed into place).
  // REQUIRES: `dir` exists.
  // Corruption if either file is not what it should be or the certificate is
  // not the key's; InvalidArgument if only one of the two files exists (the
  // message says which, and how to recover); PermissionDenied for a key file
  // that group or others can read, or an expired CA certificate; Unavailable
  // if another process is creating the CA at the same moment (retry).
  static Result<std::unique_ptr<PeerCa>> LoadOrCreate(const std::string& dir);

  // A CA held in memory only (tests, or a second, foreign CA), valid from
  // an hour before `now_ms` to `now_ms + ttl_ms`.
  // InvalidArgument for a name that is empty, longer than 64 bytes or holds
  // control characters, or ttl_ms <= 0.
  static Result<std::unique_ptr<PeerCa>> Create(std::string_view common_name, int64_t now_ms,
                                                int64_t ttl_ms);

  ~PeerCa();
  PeerCa(const PeerCa&) = delete;
  PeerCa& operator=(const PeerCa&) = delete;

  // The CA certificate, PEM: what torrents embed and peers verify against.
  const std::string& cert_pem() const { return cert_pem_; }

  // A leaf certificate for `public_key_pem` (an EC P-256 public key, PEM):
  // CN = `subject`, subjectAltName DNS:"*", basicConstraints critical
  // CA:FALSE, keyUsage critical digitalSignature+keyAgreement,
  // extendedKeyUsage serverAuth+clientAuth, an authorityKeyIdentifier, a
  // random 128-bit serial; valid from `now_ms - kPeerCertClockSkewMs` to
  // `now_ms + ttl_ms`. Signed with ECDSA-SHA256.
  // InvalidArgument for a key that is malformed or not P-256, a subject that
  // is empty, longer than 64 bytes or holds control characters, or
  // ttl_ms <= 0.
  Result<IssuedCert> Issue(std::string_view public_key_pem, std::string_view subject,
                           int64_t now_ms, int64_t ttl_ms) const;

 private:
  PeerCa(::evp_pkey_st* key, ::x509_st* cert, std::string cert_pem);

  // A CA from its PKCS#8 key and its certificate. Corruption unless the key
  // is EC P-256 and the certificate is a CA certificate for it.
  static Result<std::unique_ptr<PeerCa>> FromPem(std::string_view key_pem,
                                                 std::string_view cert_pem);
  // The private key, PKCS#8 PEM: what LoadOrCreate stores.
  Result<std::string> KeyPem() const;

  // Constant after construction.
  ::evp_pkey_st* key_;  // owned
  ::x509_st* cert_;     // owned
  std::string cert_pem_;
};

// Verifies `cert_pem` against the CA certificate `ca_pem` as of `now_ms`
// (OpenSSL's chain verification with the check time set to `now_ms`) and
// returns the leaf's notAfter in ms since the epoch.
// InvalidArgument if either PEM does not parse; PermissionDenied naming the
// reason otherwise: "... expired at <time>", "... not yet valid until
// <time>", "... not signed by this CA", or that the certificate is itself a
// CA. An expired or not yet valid CA certificate is reported as such.
Result<int64_t> VerifyPeerCert(std::string_view cert_pem, std::string_view ca_pem, int64_t now_ms);

// The notAfter of a certificate, in ms since the epoch (for the certificate
// expiry metric). InvalidArgument if the PEM does not parse.
Result<int64_t> CertNotAfterMs(std::string_view cert_pem);

// Whether `private_key_pem` is the private key of `cert_pem`'s public key.
// False, too, if either does not parse.
bool CertMatchesKey(std::string_view cert_pem, std::string_view private_key_pem);

}  // namespace shoal

#endif  // SHOAL_PEER_CERT_H_
