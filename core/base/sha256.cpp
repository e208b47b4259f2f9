#include "shoal/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace shoal {
namespace {
// Fetched once: EVP_MD_fetch per hash would dominate 16 KiB block hashing.
const EVP_MD* Sha256Md() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || Sha256Md() == nullptr)
    throw std::runtime_error("OpenSSL SHA-256 unavailable");
  Reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Reset() {
  if (EVP_DigestInit_ex2(ctx_, Sha256Md(), nullptr) != 1) {
    throw std::runtime_error("EVP_DigestInit_ex2 failed");
  }
}

void Sha256::Update(const void* data, size_t len) { EVP_DigestUpdate(ctx_, data, len); }

Digest Sha256::Finish() {
  Digest d;
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_, d.mutable_data(), &len);
  Reset();
  return d;
}

Digest Sha256::Hash(const void* data, size_t len) {
  Update(data, len);
  return Finish();
}

Digest Sha256::HashPair(const Digest& a, const Digest& b) {
  uint8_t buf[2 * Digest::kSize];
  std::memcpy(buf, a.data(), Digest::kSize);
  std::memcpy(buf + Digest::kSize, b.data(), Digest::kSize);
  return Hash(buf, sizeof(buf));
}

Digest Sha256::Of(const void* data, size_t len) {
  Sha256 h;
  return h.Hash(data, len);
}

}  // namespace shoal
