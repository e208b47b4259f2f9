// SHA-256 through OpenSSL's EVP interface, which uses SHA-NI where the CPU
// has it.
//
// Thread-safety: a Sha256 object is used by one thread at a time; distinct
// objects may be used concurrently.
#ifndef SHOAL_SHA256_H_
#define SHOAL_SHA256_H_

#include <cstddef>
#include <cstdint>

#include "shoal/hash256.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace shoal {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t len);
  // Returns the digest and resets the object for a new message.
  Digest Finish();

  // Digest of one buffer, reusing this object's context.
  Digest Hash(const void* data, size_t len);
  // Digest of the 64-byte concatenation a || b: one merkle node.
  Digest HashPair(const Digest& a, const Digest& b);

  // One-shot convenience; allocates a context per call.
  static Digest Of(const void* data, size_t len);

 private:
  void Reset();
  ::evp_md_ctx_st* ctx_;  // owned
};

}  // namespace shoal

#endif  // SHOAL_SHA256_H_
