// PeerCerts: the tracker's side of peer admission. When the cluster admits
// peers by certificate (--peer-security tls or auth), each agent sends the public half of
// a key it made and gets a short-lived certificate from the cluster's peer
// CA for it: at registration, and again before it expires.
//
// The agent's token is checked at every issue, as at registration (valid,
// not expired, reading every namespace), so an agent whose token is no
// longer valid gets no new certificate and drops out of the swarms when
// its last one expires.
//
// Thread-safety: immutable after construction; Issue may be called from
// any thread.
#ifndef SHOAL_TRACKER_PEER_CERTS_H_
#define SHOAL_TRACKER_PEER_CERTS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "shoal/peer_cert.h"
#include "shoal/status.h"

namespace shoal::tracker {

class TokenVerifier;
struct TrackerMetrics;

// What registration and every certificate ask of an agent's token: valid
// (signed, unexpired, unrevoked) at `now_ms`, and reading every namespace.
// Unauthenticated or PermissionDenied otherwise (TokenVerifier).
Status CheckAgentToken(const TokenVerifier& tokens, std::string_view token, int64_t now_ms);

class PeerCerts {
 public:
  // `ca` null: peers speak plain BitTorrent and nothing is issued. With
  // `auth_only`, torrents are plain and peers prove holding a certificate in
  // the extension handshake instead of speaking TLS. `ca`, `tokens` and
  // `metrics` must outlive this.
  PeerCerts(const PeerCa* ca, int64_t ttl_ms, const TokenVerifier& tokens, TrackerMetrics& metrics,
            bool auth_only = false)
      : ca_(ca), ttl_ms_(ttl_ms), tokens_(tokens), metrics_(metrics), auth_only_(auth_only) {}

  bool enabled() const { return ca_ != nullptr; }
  // Certificates are issued, but peers speak plain BitTorrent (--peer-security auth).
  bool auth_only() const { return ca_ != nullptr && auth_only_; }
  // The CA's certificate (PEM); empty when not enabled.
  std::string ca_pem() const;

  // A certificate for `public_key_pem`, named after `agent_id`, valid for
  // the configured time from now.
  // Unauthenticated or PermissionDenied for a token CheckAgentToken refuses; InvalidArgument
  // for a malformed key, or when not enabled.
  Result<IssuedCert> Issue(std::string_view token, std::string_view public_key_pem,
                           std::string_view agent_id) const;

 private:
  const PeerCa* ca_;
  const int64_t ttl_ms_;
  const TokenVerifier& tokens_;
  TrackerMetrics& metrics_;
  const bool auth_only_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_PEER_CERTS_H_
