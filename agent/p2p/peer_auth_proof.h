// PeerAuthProof: what a peer signs, in `auth` mode, to prove that it holds a
// certificate from the cluster's peer CA, and how the other end checks it.
//
// Each end of a connection sends a fresh random nonce in its extension
// handshake. Each then signs, with its certificate's key (ECDSA P-256,
// SHA-256),
//
//   "shoal-peer-auth-v1" || role || the other end's nonce || its own nonce
//                        || the torrent's info-hash
//
// where role is 'O' for the end that opened the connection and 'A' for the
// end that accepted it. The other end's nonce makes a proof good for one
// connection only, so a captured proof cannot be replayed; the role keeps a
// peer from echoing a proof back to the end that made it (which would
// otherwise match when the echoing end copies the nonce, too); the
// info-hash ties it to one torrent.
//
// Thread-safety: PeerAuthKeys is immutable after construction; every
// function here may be called from any thread.
#ifndef SHOAL_AGENT_P2P_PEER_AUTH_PROOF_H_
#define SHOAL_AGENT_P2P_PEER_AUTH_PROOF_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "p2p/engine_options.h"
#include "shoal/status.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace shoal {

constexpr size_t kPeerAuthNonceBytes = 32;
using PeerAuthNonce = std::array<uint8_t, kPeerAuthNonceBytes>;

// A fresh nonce from OpenSSL's random generator.
PeerAuthNonce NewPeerAuthNonce();

// Which end of the connection signs.
enum class PeerAuthRole : char { kOpener = 'O', kAcceptor = 'A' };

// The bytes signed by the end in `role`.
std::string PeerAuthMessage(PeerAuthRole role, const PeerAuthNonce& theirs,
                            const PeerAuthNonce& own, std::string_view info_hash);

// The engine's identity, parsed once: the CA to check peers against, and
// the certificate and key to prove its own membership with.
class PeerAuthKeys {
 public:
  // InvalidArgument if the key does not parse or is not the certificate's.
  static Result<std::shared_ptr<const PeerAuthKeys>> FromIdentity(const PeerIdentity& id);
  ~PeerAuthKeys();
  PeerAuthKeys(const PeerAuthKeys&) = delete;
  PeerAuthKeys& operator=(const PeerAuthKeys&) = delete;

  const std::string& ca_pem() const { return ca_pem_; }
  const std::string& cert_pem() const { return cert_pem_; }

  // `message` signed with the engine's key (a DER ECDSA signature).
  Result<std::string> Sign(std::string_view message) const;

 private:
  PeerAuthKeys(std::string ca_pem, std::string cert_pem, ::evp_pkey_st* key);
  const std::string ca_pem_;
  const std::string cert_pem_;
  ::evp_pkey_st* const key_;  // owned
};

// Checks a peer's proof: `cert_pem` is a peer certificate the CA of `keys`
// signed, valid at `now_ms`, and `signature` is its key's signature of
// `message`. False, with `refusal` (kBadCertificate, kBadSignature or
// kMalformed) and `why` set, if not.
bool VerifyPeerAuthProof(const PeerAuthKeys& keys, std::string_view cert_pem,
                         std::string_view signature, std::string_view message, int64_t now_ms,
                         PeerAuthRefusal* refusal, std::string* why);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_PEER_AUTH_PROOF_H_
