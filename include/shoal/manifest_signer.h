// Manifest signatures: the tracker vouches for every version it accepts.
//
// The tracker signs each version ID with an Ed25519 key kept in its data
// folder and serves the public key; the CLI and the agents check every
// manifest they receive against it. What is signed is the domain tag
// "shoal-manifest-v1:" followed by the 32 raw bytes of the version ID, so a
// signature over a version can never be mistaken for one over anything else.
#ifndef SHOAL_MANIFEST_SIGNER_H_
#define SHOAL_MANIFEST_SIGNER_H_

#include <memory>
#include <string>
#include <string_view>

#include "shoal/status.h"
#include "shoal/version_id.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace shoal {

constexpr size_t kManifestPublicKeyBytes = 32;
constexpr size_t kManifestSignatureBytes = 64;

// Holds the tracker's private key and signs version IDs with it.
//
// Thread-safety: immutable after construction; Sign may be called from any
// number of threads at once.
class ManifestSigner {
 public:
  // Reads the PKCS#8 PEM key at `key_path`, or creates a fresh Ed25519 key
  // there (mode 0600, atomically) if it does not exist. A key file readable
  // by group or others, or one that is not Ed25519, is refused.
  static Result<std::unique_ptr<ManifestSigner>> LoadOrCreate(const std::string& key_path);

  ~ManifestSigner();
  ManifestSigner(const ManifestSigner&) = delete;
  ManifestSigner& operator=(const ManifestSigner&) = delete;

  // The first 16 hex digits of SHA-256(public key): names the key in errors.
  const std::string& key_id() const { return key_id_; }
  // The 32 raw bytes of the Ed25519 public key.
  const std::string& public_key() const { return public_key_; }

  // A 64-byte Ed25519 signature over the version ID.
  std::string Sign(const VersionId& id) const;

 private:
  explicit ManifestSigner(::evp_pkey_st* key);

  // Constant after construction.
  ::evp_pkey_st* key_;  // owned
  std::string public_key_;
  std::string key_id_;
};

// A version a tracker copied from another cluster's (--follow): that
// cluster's signature, kept beside the mirror's own (proto/manifest.capnp).
struct UpstreamSignature {
  std::string tracker;        // the upstream tracker's address, as followed; empty: none
  std::string signature;      // 64 bytes, Ed25519 over the version ID
  std::string signer_key_id;  // ManifestKeyId(public_key)
  std::string public_key;     // 32 raw bytes
  int64_t copied_at_ms = 0;   // when the mirror committed the version

  bool empty() const { return tracker.empty(); }
  // OK if `signature` verifies under `public_key` and the key ID names that
  // key: the version is the one the upstream signed.
  Status Verify(const VersionId& id) const;
};

// The first 16 hex digits of SHA-256(public_key).
std::string ManifestKeyId(std::string_view public_key);

// OK if `signature` is the signer's signature over `id` under `public_key`.
// InvalidArgument if the key is not 32 bytes or the signature not 64;
// Corruption "manifest signature does not verify with tracker key <key id>"
// otherwise.
Status VerifyManifestSignature(const VersionId& id, std::string_view signature,
                               std::string_view public_key);

}  // namespace shoal

#endif  // SHOAL_MANIFEST_SIGNER_H_
