#include "shoal/manifest_signer.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstring>
#include <stdexcept>

#include "shoal/openssl_ptr.h"
#include "shoal/secret_file.h"
#include "shoal/sha256.h"

namespace shoal {
namespace {

constexpr char kDomainTag[] = "shoal-manifest-v1:";
constexpr size_t kDomainTagLen = sizeof(kDomainTag) - 1;

std::string SignedMessage(const VersionId& id) {
  std::string msg(kDomainTag, kDomainTagLen);
  msg.append(reinterpret_cast<const char*>(id.data()), VersionId::kSize);
  return msg;
}

Result<std::string> NewKeyPem() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!key) return Status::IOError("OpenSSL could not generate an Ed25519 key");
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Status::IOError("OpenSSL could not encode the Ed25519 key as PEM");
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, size_t(len));
}

Result<PkeyPtr> ParseKeyPem(const std::string& pem, const std::string& path) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), int(pem.size())));
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    ERR_clear_error();
    return Status::Corruption("signing key " + path + " is not a PEM private key");
  }
  if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
    return Status::InvalidArgument("signing key " + path + " is not an Ed25519 key");
  }
  return key;
}

}  // namespace

std::string ManifestKeyId(std::string_view public_key) {
  return Sha256::Of(public_key.data(), public_key.size()).ToHex().substr(0, 16);
}

Result<std::unique_ptr<ManifestSigner>> ManifestSigner::LoadOrCreate(const std::string& key_path) {
  Result<std::string> pem = ReadSecretFile(key_path);
  if (!pem.ok() && pem.status().IsNotFound()) {
    Result<std::string> fresh = NewKeyPem();
    if (!fresh.ok()) return fresh.status();
    Status created = CreateSecretFile(key_path, *fresh);
    if (created.ok()) {
      pem = std::move(fresh);
    } else if (created.code() == Status::Code::kAlreadyExists) {
      pem = ReadSecretFile(key_path);  // another process won the race
    } else {
      return created;
    }
  }
  if (!pem.ok()) return pem.status();
  Result<PkeyPtr> key = ParseKeyPem(*pem, key_path);
  if (!key.ok()) return key.status();
  return std::unique_ptr<ManifestSigner>(new ManifestSigner(key->release()));
}

ManifestSigner::ManifestSigner(EVP_PKEY* key) : key_(key) {
  unsigned char raw[kManifestPublicKeyBytes];
  size_t len = sizeof(raw);
  if (EVP_PKEY_get_raw_public_key(key_, raw, &len) != 1 || len != sizeof(raw)) {
    EVP_PKEY_free(key_);
    throw std::runtime_error("OpenSSL could not extract the Ed25519 public key");
  }
  public_key_.assign(reinterpret_cast<const char*>(raw), len);
  key_id_ = ManifestKeyId(public_key_);
}

ManifestSigner::~ManifestSigner() { EVP_PKEY_free(key_); }

std::string ManifestSigner::Sign(const VersionId& id) const {
  std::string msg = SignedMessage(id);
  MdCtxPtr ctx(EVP_MD_CTX_new());
  unsigned char sig[kManifestSignatureBytes];
  size_t sig_len = sizeof(sig);
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &sig_len, reinterpret_cast<const unsigned char*>(msg.data()),
                     msg.size()) != 1 ||
      sig_len != sizeof(sig)) {
    throw std::runtime_error("OpenSSL Ed25519 signing failed");
  }
  return std::string(reinterpret_cast<const char*>(sig), sig_len);
}

Status VerifyManifestSignature(const VersionId& id, std::string_view signature,
                               std::string_view public_key) {
  if (public_key.size() != kManifestPublicKeyBytes) {
    return Status::InvalidArgument("a tracker public key is 32 bytes, got " +
                                   std::to_string(public_key.size()));
  }
  if (signature.size() != kManifestSignatureBytes) {
    return Status::InvalidArgument("a manifest signature is 64 bytes, got " +
                                   std::to_string(signature.size()));
  }
  PkeyPtr key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                          reinterpret_cast<const unsigned char*>(public_key.data()),
                                          public_key.size()));
  MdCtxPtr ctx(EVP_MD_CTX_new());
  std::string msg = SignedMessage(id);
  bool good = key && ctx &&
              EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
              EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                               signature.size(), reinterpret_cast<const unsigned char*>(msg.data()),
                               msg.size()) == 1;
  if (!good) {
    ERR_clear_error();  // a bad signature is an answer, not a pending OpenSSL error
    return Status::Corruption("manifest signature does not verify with tracker key " +
                              ManifestKeyId(public_key) + " (version " + id.ShortHex() + ")");
  }
  return Status::OK();
}

Status UpstreamSignature::Verify(const VersionId& id) const {
  if (ManifestKeyId(public_key) != signer_key_id) {
    return Status::Corruption("the upstream signature names key " + signer_key_id +
                              " but carries key " + ManifestKeyId(public_key));
  }
  return VerifyManifestSignature(id, signature, public_key)
      .WithContext("upstream signature from " + tracker);
}

}  // namespace shoal
