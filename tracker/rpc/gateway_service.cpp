#include "rpc/gateway_service.h"

#include <algorithm>

#include "agents/agent_directory.h"
#include "auth/peer_certs.h"
#include "auth/token_verifier.h"
#include "common/tracker_metrics.h"
#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "registry/record_fill.h"
#include "rpc/agent_session.h"
#include "shoal/log.h"
#include "shoal/manifest_signer.h"
#include "shoal/token.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

class GatewayImpl final : public proto::Gateway::Server {
 public:
  GatewayImpl(const GatewayDeps& d, std::string peer_address, kj::Timer& timer,
              kj::Function<void()> on_authenticated)
      : d_(d),
        timer_(timer),
        peer_address_(std::move(peer_address)),
        on_authenticated_(kj::mv(on_authenticated)) {}

 protected:
  kj::Promise<void> authenticate(AuthenticateContext c) override {
    Result<TokenClaims> claims = d_.tokens.Verify(Text(c.getParams().getToken()), NowMs());
    if (!claims.ok()) {
      d_.metrics.auth_denied++;
      ThrowIfError(claims.status());
    }
    d_.metrics.auth_ok++;
    on_authenticated_();
    FillIdentity(*claims, c.getResults().initIdentity());
    c.getResults().setRegistry(NewRegistry(d_.registry, std::move(claims).value(), timer_));
    return kj::READY_NOW;
  }

  kj::Promise<void> registerAgent(RegisterAgentContext c) override {
    auto p = c.getParams();
    Status s = CheckAgentToken(d_.tokens, Text(p.getToken()), NowMs());
    if (!s.ok()) {
      d_.metrics.auth_denied++;
      ThrowIfError(s.WithContext(s.code() == Status::Code::kPermissionDenied
                                     ? "agent registration needs a token for every namespace "
                                       "(--ns '*')"
                                     : "agent registration"));
    }
    on_authenticated_();
    auto info = p.getInfo();
    AgentRecord r;
    r.name = Text(info.getName()).substr(0, 128);
    r.address = peer_address_;
    r.peer_port = info.getPeerPort();
    r.peer_sessions = std::max<uint16_t>(1, info.getPeerSessions());
    r.zone = Text(info.getZone()).substr(0, 64);
    r.cache_bytes = info.getCacheBytes();
    r.version = Text(info.getVersion()).substr(0, 64);
    for (auto label : info.getLabels()) {
      if (r.labels.size() < 32) r.labels.push_back(Text(label).substr(0, 128));
    }
    if (r.name.empty() || r.peer_port == 0) {
      ThrowIfError(Status::InvalidArgument("agent registration needs a name and a peer port"));
    }
    if (r.peer_sessions > 64 || r.peer_port + r.peer_sessions - 1 > 65535) {
      ThrowIfError(Status::InvalidArgument(
          "agent registration names " + std::to_string(r.peer_sessions) +
          " peer sessions from port " + std::to_string(r.peer_port) + ": at most 64, below 65536"));
    }
    // The ID says where its peers listen: one port, or the first and last
    // of its sessions' (owner_peers.h reads it).
    r.id = r.name + "@" + r.address + ":" + std::to_string(r.peer_port);
    if (r.peer_sessions > 1) r.id += "-" + std::to_string(r.peer_port + r.peer_sessions - 1);
    std::string id = r.id;
    auto results = c.getResults();
    if (d_.peer_certs.enabled()) {
      if (!p.hasPeerKey()) {
        ThrowIfError(Status::InvalidArgument(
            "this cluster admits peers by certificate, and the agent sent no peer key: "
            "upgrade shoald"));
      }
      auto cert = d_.peer_certs.Issue(Text(p.getToken()), Text(p.getPeerKey()), id);
      if (!cert.ok()) ThrowIfError(cert.status());
      results.setPeerCa(d_.peer_certs.ca_pem());
      results.setPeerAuthOnly(d_.peer_certs.auth_only());
      FillPeerCert(*cert, results.initPeerCert());
    }
    const uint64_t session = NewSessionId();
    r.session = session;
    // An agent of a fleet heartbeats its home tracker at the interval and
    // the others less often; the connection closing still removes it at once.
    // A large fleet is told a longer interval (AgentDirectory's pacing).
    r.heartbeat_factor = info.getAway() ? kAwayHeartbeatFactor : 1;
    int64_t heartbeat_ms = 0;
    uint64_t epoch = d_.agents.Join(std::move(r), NowMs(), &heartbeat_ms);
    Log(LogLevel::kInfo, "agent.join", {{"agent", id}, {"epoch", epoch}});
    // Verified just above; read again for the session, which watches for
    // its revocation.
    TokenClaims agent_token = ValueOrThrow(d_.tokens.Verify(Text(p.getToken()), NowMs()));
    results.setSession(
        NewAgentSession(AgentSessionDeps{d_.agents, d_.controls, d_.peer_certs,
                                         d_.tokens.revocations(), d_.announce, d_.ring},
                        std::move(agent_token), id, session, peer_address_, p.getControl()));
    results.setAgentId(id);
    results.setEpoch(epoch);
    results.setHeartbeatMs(static_cast<uint32_t>(heartbeat_ms));
    results.setHttpPort(d_.http_port);
    return kj::READY_NOW;
  }

  kj::Promise<void> publicKey(PublicKeyContext c) override {
    c.getResults().setKeyId(d_.signer.key_id());
    c.getResults().setKey(Raw(d_.signer.public_key()));
    return kj::READY_NOW;
  }

 private:
  const GatewayDeps d_;
  kj::Timer& timer_;
  const std::string peer_address_;  // the connection's remote IP
  kj::Function<void()> on_authenticated_;
};

}  // namespace

kj::Own<proto::Gateway::Server> NewGateway(const GatewayDeps& deps, const std::string& peer_address,
                                           kj::Timer& timer,
                                           kj::Function<void()> on_authenticated) {
  return kj::heap<GatewayImpl>(deps, peer_address, timer, kj::mv(on_authenticated));
}

}  // namespace shoal::tracker
