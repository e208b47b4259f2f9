#include "auth/peer_certs.h"

#include "auth/token_verifier.h"
#include "common/tracker_metrics.h"
#include "shoal/log.h"
#include "shoal/token.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {

// The longest common name X.509 allows.
constexpr size_t kMaxSubject = 64;

Status CheckAgentToken(const TokenVerifier& tokens, std::string_view token, int64_t now_ms) {
  return tokens.Authorize(token, "*", Role::kRead, now_ms).status();
}

std::string PeerCerts::ca_pem() const { return ca_ != nullptr ? ca_->cert_pem() : std::string(); }

Result<IssuedCert> PeerCerts::Issue(std::string_view token, std::string_view public_key_pem,
                                    std::string_view agent_id) const {
  if (ca_ == nullptr) {
    return Status::InvalidArgument(
        "this cluster's peers speak plain BitTorrent (--peer-tls off): no certificates");
  }
  const int64_t now = NowMs();
  Status s = CheckAgentToken(tokens_, token, now);
  if (!s.ok()) {
    metrics_.peer_certs_refused++;
    Log(LogLevel::kWarn, "agent.cert_refused",
        {{"agent", std::string(agent_id)}, {"error", s.ToString()}});
    return s.WithContext("a peer certificate needs an agent token for every namespace");
  }
  auto cert = ca_->Issue(public_key_pem, agent_id.substr(0, kMaxSubject), now, ttl_ms_);
  if (!cert.ok()) {
    metrics_.peer_certs_refused++;
    return cert.status();
  }
  metrics_.peer_certs_issued++;
  Log(LogLevel::kInfo, "agent.cert_issued",
      {{"agent", std::string(agent_id)}, {"not_after_ms", cert->not_after_ms}});
  return cert;
}

}  // namespace shoal::tracker
