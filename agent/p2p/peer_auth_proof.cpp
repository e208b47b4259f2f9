#include "p2p/peer_auth_proof.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <stdexcept>

#include "shoal/openssl_ptr.h"
#include "shoal/peer_cert.h"

namespace shoal {
namespace {

constexpr char kLabel[] = "shoal-peer-auth-v1";

PkeyPtr ParsePrivateKey(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  return PkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

X509Ptr ParseCertificate(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

bool Refuse(PeerAuthRefusal r, std::string message, PeerAuthRefusal* refusal, std::string* why) {
  *refusal = r;
  *why = std::move(message);
  return false;
}

}  // namespace

PeerAuthNonce NewPeerAuthNonce() {
  PeerAuthNonce n{};
  // RAND_bytes fails only when OpenSSL cannot seed itself: a broken host,
  // not a peer's doing.
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) {
    throw std::runtime_error("OpenSSL's random generator failed");
  }
  return n;
}

std::string PeerAuthMessage(PeerAuthRole role, const PeerAuthNonce& theirs,
                            const PeerAuthNonce& own, std::string_view info_hash) {
  std::string m(kLabel);
  m.push_back(static_cast<char>(role));
  m.append(reinterpret_cast<const char*>(theirs.data()), theirs.size());
  m.append(reinterpret_cast<const char*>(own.data()), own.size());
  m.append(info_hash);
  return m;
}

PeerAuthKeys::PeerAuthKeys(std::string ca_pem, std::string cert_pem, ::evp_pkey_st* key)
    : ca_pem_(std::move(ca_pem)), cert_pem_(std::move(cert_pem)), key_(key) {}

PeerAuthKeys::~PeerAuthKeys() { EVP_PKEY_free(key_); }

Result<std::shared_ptr<const PeerAuthKeys>> PeerAuthKeys::FromIdentity(const PeerIdentity& id) {
  if (!CertMatchesKey(id.cert_pem, id.key_pem)) {
    return Status::InvalidArgument("the peer key does not parse or is not the certificate's");
  }
  PkeyPtr key = ParsePrivateKey(id.key_pem);
  if (!key) return Status::InvalidArgument("the peer key does not parse");
  return std::shared_ptr<const PeerAuthKeys>(
      new PeerAuthKeys(id.ca_pem, id.cert_pem, key.release()));
}

Result<std::string> PeerAuthKeys::Sign(std::string_view message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    return Status::IOError("OpenSSL could not sign the peer proof");
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    return Status::IOError("OpenSSL could not sign the peer proof");
  }
  sig.resize(len);
  return sig;
}

bool VerifyPeerAuthProof(const PeerAuthKeys& keys, std::string_view cert_pem,
                         std::string_view signature, std::string_view message, int64_t now_ms,
                         PeerAuthRefusal* refusal, std::string* why) {
  // Chain to the cluster's CA, validity times, not itself a CA.
  Result<int64_t> valid = VerifyPeerCert(cert_pem, keys.ca_pem(), now_ms);
  if (!valid.ok()) {
    const PeerAuthRefusal r = valid.status().code() == Status::Code::kInvalidArgument
                                  ? PeerAuthRefusal::kMalformed
                                  : PeerAuthRefusal::kBadCertificate;
    return Refuse(r, valid.status().ToString(), refusal, why);
  }
  X509Ptr cert = ParseCertificate(cert_pem);
  EVP_PKEY* pub = cert ? X509_get0_pubkey(cert.get()) : nullptr;
  MdCtxPtr ctx(EVP_MD_CTX_new());
  if (pub == nullptr || !ctx ||
      EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, pub) != 1) {
    return Refuse(PeerAuthRefusal::kMalformed, "the certificate's key is unusable", refusal, why);
  }
  const int ok = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
      reinterpret_cast<const unsigned char*>(message.data()), message.size());
  if (ok != 1) {
    ERR_clear_error();
    return Refuse(PeerAuthRefusal::kBadSignature,
                  "the signature is not the certificate key's over this connection's challenge",
                  refusal, why);
  }
  return true;
}

}  // namespace shoal
