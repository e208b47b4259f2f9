#include "rpc/agent_session.h"

#include <atomic>

#include "agents/agent_directory.h"
#include "agents/ring_snapshot.h"
#include "auth/peer_certs.h"
#include "common/tracker_metrics.h"
#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "scheduler/agent_controls.h"
#include "shoal/log.h"
#include "shoal/utc_time.h"
#include "swarm/swarm_batch.h"
#include "swarm/swarm_store.h"

namespace shoal::tracker {
namespace {

// Tells registrations apart, even two of one agent id.
std::atomic<uint64_t> next_session{1};

// Writes the ring's changes into a capnp list: a heartbeat's RingDelta or
// ring()'s results, straight from the directory's log.
template <typename Builder>
class RingChangeWriter final : public RingChangeSink {
 public:
  // `delta`: the changes are after the epoch the agent holds (not after a
  // snapshot).
  RingChangeWriter(Builder out, bool delta) : out_(out), delta_(delta) {}
  // The epoch the changes lead to; 0 until Begin.
  uint64_t epoch() const { return epoch_; }
  void Begin(uint64_t epoch, size_t changes) override {
    epoch_ = epoch;
    out_.setDelta(delta_);
    list_ = out_.initChanges(static_cast<unsigned>(changes));
  }
  void Change(const std::string& id, uint64_t weight, bool left) override {
    auto c = list_[next_++];
    c.setAgentId(id);
    c.setWeight(weight);
    c.setLeft(left);
  }

 private:
  Builder out_;
  const bool delta_;
  capnp::List<proto::RingChange>::Builder list_;
  unsigned next_ = 0;
  uint64_t epoch_ = 0;
};

// One registered agent's membership; dropping it (the connection closing)
// removes the agent.
class AgentSessionImpl final : public proto::AgentSession::Server {
 public:
  AgentSessionImpl(const AgentSessionDeps& deps, TokenClaims agent_token, std::string id,
                   uint64_t session, std::string peer_ip, proto::AgentControl::Client control)
      : agents_(deps.agents),
        controls_(deps.controls),
        certs_(deps.certs),
        revocations_(deps.revocations),
        announce_(deps.announce),
        ring_(deps.ring),
        agent_token_(std::move(agent_token)),
        id_(std::move(id)),
        peer_ip_(std::move(peer_ip)),
        peer_address_(PeerAddress::Parse(peer_ip_).value_or(PeerAddress{})),
        holder_(session) {
    controls_.Attach(id_, holder_, kj::mv(control));
  }
  ~AgentSessionImpl() noexcept(false) {
    // A newer registration of the same agent keeps its record and control.
    controls_.Detach(id_, holder_);
    agents_.Leave(id_, holder_);
    announce_.swarm.Release(holder_);
    Log(LogLevel::kInfo, "agent.leave", {{"agent", id_}});
  }

 protected:
  kj::Promise<void> heartbeat(HeartbeatContext c) override {
    // Expiry is left to registration and certificate renewal, as before;
    // a revocation ends the membership now.
    CheckNotRevoked();
    int64_t next_ms = 0;
    if (!agents_.Heartbeat(id_, ReadAgentStats(c.getParams().getStats()), NowMs(),
                           c.getParams().getHeartbeatMs(), &next_ms)) {
      announce_.swarm.Release(holder_);
      ThrowIfError(Status::Unavailable("agent " + id_ +
                                       " missed its heartbeats and was dropped; register again"));
    }
    auto results = c.getResults();
    results.setHeartbeatMs(static_cast<uint32_t>(next_ms));
    const uint64_t seen = c.getParams().getRingSeen();
    const uint64_t epoch = agents_.epoch();
    uint64_t reached = epoch;
    if (seen != 0 && seen != epoch) {
      RingChangeWriter<proto::RingDelta::Builder> writer(results.initRing(), true);
      if (agents_.RingChanges(seen, NowMs(), writer, AgentDirectory::Detail::kNet)) {
        reached = writer.epoch();  // the epoch after the changes (it may have moved)
        announce_.metrics.ring_changes_sent += results.getRing().getChanges().size();
      }
    }
    results.setEpoch(reached);
    FillDelta(c.getParams().getRevocationsSource(), c.getParams().getRevocationsSeen(),
              results.initRevocations());
    return kj::READY_NOW;
  }

  kj::Promise<void> ring(RingContext c) override {
    auto results = c.getResults();
    const uint64_t since = c.getParams().getSinceEpoch();
    const int64_t now = NowMs();
    RingChangeWriter<proto::AgentSession::RingResults::Builder> delta(results, true);
    if (agents_.RingChanges(since, now, delta, AgentDirectory::Detail::kNet)) {
      results.setEpoch(delta.epoch());
      announce_.metrics.ring_changes_sent += results.getChanges().size();
      return kj::READY_NOW;
    }
    // The shared snapshot, then what changed after it.
    RingChangeWriter<proto::AgentSession::RingResults::Builder> after(results, false);
    constexpr auto kNet = AgentDirectory::Detail::kNet;
    RingSnapshot snap = ring_.Get(now);
    if (!agents_.RingChanges(snap.epoch, now, after, kNet)) {
      snap = ring_.Get(now, /*fresh=*/true);
      if (!agents_.RingChanges(snap.epoch, now, after, kNet)) results.initChanges(0);
    }
    results.setSnapshot(kj::arrayPtr(reinterpret_cast<const kj::byte*>(snap.message->data()),
                                     snap.message->size()));
    results.setSnapshotEpoch(snap.epoch);
    results.setEpoch(after.epoch() != 0 ? after.epoch() : snap.epoch);
    announce_.metrics.ring_changes_sent += results.getChanges().size();
    return kj::READY_NOW;
  }

  kj::Promise<void> renewPeerCert(RenewPeerCertContext c) override {
    auto p = c.getParams();
    auto cert = certs_.Issue(Text(p.getToken()), Text(p.getPeerKey()), id_);
    if (!cert.ok()) ThrowIfError(cert.status());
    FillPeerCert(*cert, c.getResults().initPeerCert());
    return kj::READY_NOW;
  }

  kj::Promise<void> announceBatch(AnnounceBatchContext c) override {
    CheckNotRevoked();
    if (!agents_.Contains(id_, NowMs())) {
      announce_.swarm.Release(holder_);
      ThrowIfError(Status::Unavailable("agent " + id_ +
                                       " missed its heartbeats and was dropped; register again"));
    }
    AnswerSwarmBatch(announce_, SwarmSender{agent_token_, holder_, id_, peer_address_},
                     c.getParams().getEntries(), c.getResults());
    return kj::READY_NOW;
  }

  kj::Promise<void> announce(AnnounceContext c) override {
    HttpRequest req;
    req.method = "GET";
    req.target = "/announce?" + std::string(Text(c.getParams().getQuery()));
    // The port is not used: the peer's port is the announce's own.
    req.remote_address =
        (peer_ip_.find(':') == std::string::npos ? peer_ip_ : "[" + peer_ip_ + "]") + ":0";
    HttpResponse res = ParseTarget(req.target, &req)
                           ? HandleAnnounce(announce_, req)
                           : HttpResponse::Text(400, BencodeFailure("malformed announce query"));
    auto out = c.getResults();
    out.setStatus(static_cast<uint16_t>(res.status));
    out.setBody(kj::arrayPtr(reinterpret_cast<const kj::byte*>(res.body.data()), res.body.size()));
    return kj::READY_NOW;
  }

 private:
  // Throws if the agent's token is revoked; the message is built only then
  // (this runs on every heartbeat).
  void CheckNotRevoked() const {
    Status s = revocations_.Check(agent_token_);
    if (!s.ok()) ThrowIfError(s.WithContext("agent " + id_));
  }

  // The revocations after the agent's `seen`; all of them if the agent's
  // list came from another source (another tracker start) or has seen more
  // than this tracker holds.
  void FillDelta(uint64_t source, uint64_t seen, proto::RevocationDelta::Builder out) const {
    const uint64_t generation = revocations_.generation();
    const bool reset = source != revocations_.source() || seen > generation;
    std::vector<Revocation> delta = revocations_.Since(reset ? 0 : seen);
    out.setGeneration(delta.empty() ? generation : delta.back().seq);
    out.setReset(reset);
    out.setSource(revocations_.source());
    auto list = out.initRevocations(static_cast<unsigned>(delta.size()));
    for (size_t i = 0; i < delta.size(); ++i)
      FillRevocation(delta[i], list[static_cast<unsigned>(i)]);
  }

  AgentDirectory& agents_;
  AgentControls& controls_;
  const PeerCerts& certs_;
  const RevocationList& revocations_;
  const AnnounceDeps& announce_;
  RingSnapshots& ring_;
  const TokenClaims agent_token_;  // verified at registration
  const std::string id_;
  const std::string peer_ip_;
  const PeerAddress peer_address_;  // peer_ip_ in binary; none if it is not an IP address
  const uint64_t holder_;           // the swarm peers this session holds (SwarmStore::Release)
};

}  // namespace

uint64_t NewSessionId() { return next_session++; }

kj::Own<proto::AgentSession::Server> NewAgentSession(const AgentSessionDeps& deps,
                                                     TokenClaims agent_token, std::string agent_id,
                                                     uint64_t session, std::string peer_ip,
                                                     proto::AgentControl::Client control) {
  return kj::heap<AgentSessionImpl>(deps, std::move(agent_token), std::move(agent_id), session,
                                    std::move(peer_ip), kj::mv(control));
}

}  // namespace shoal::tracker
