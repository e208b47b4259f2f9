#include "daemon/tracker_link.h"

#include <capnp/serialize.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "proto/rpc_tls.h"
#include "shoal/log.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

VersionId OrderVersion(capnp::Data::Reader d) {
  Result<VersionId> id = ParseVersionId(d);
  ThrowIfError(id.status().WithContext("order"));
  return *id;
}

std::vector<ChunkId> OrderChunks(capnp::List<capnp::Data>::Reader list) {
  Result<std::vector<ChunkId>> chunks = ParseChunkIds(list);
  ThrowIfError(chunks.status().WithContext("order"));
  return std::move(chunks).value();
}

class AgentControlImpl final : public proto::AgentControl::Server {
 public:
  AgentControlImpl(const ControlHandlers& handlers, JobThreads& jobs)
      : handlers_(handlers), jobs_(jobs) {}

 protected:
  kj::Promise<void> status(StatusContext c) override {
    FillAgentStats(handlers_.stats(), c.getResults().initStats());
    return kj::READY_NOW;
  }

  kj::Promise<void> fetch(FetchContext c) override {
    auto p = c.getParams();
    std::string ns = p.getNamespace(), name = p.getName();
    VersionId version = OrderVersion(p.getVersionId());
    std::vector<ChunkId> chunks = OrderChunks(p.getChunks());
    bool takeover = p.getTakeover();
    auto handler = handlers_.fetch;
    return jobs_
        .Run<Result<FetchOrderResult>>([handler, ns, name, version, chunks, takeover] {
          return handler(ns, name, version, chunks, takeover);
        })
        .then([c](Result<FetchOrderResult> r) mutable {
          ThrowIfError(r.status());
          c.getResults().setFetched(r->fetched);
          c.getResults().setBytes(r->bytes);
        });
  }

  kj::Promise<void> prefetch(PrefetchContext c) override {
    auto p = c.getParams();
    std::string ns = p.getNamespace(), name = p.getName();
    VersionId version = OrderVersion(p.getVersionId());
    auto handler = handlers_.prefetch;
    return jobs_
        .Run<Result<PrefetchResult>>(
            [handler, ns, name, version] { return handler(ns, name, version); })
        .then([c](Result<PrefetchResult> r) mutable {
          ThrowIfError(r.status());
          c.getResults().setBytes(r->bytes);
          c.getResults().setBytesFromPeers(r->from_peers);
          c.getResults().setBytesFromOrigin(r->from_origin);
        });
  }

  kj::Promise<void> replicate(ReplicateContext c) override {
    auto p = c.getParams();
    std::string ns = p.getNamespace(), name = p.getName();
    VersionId version = OrderVersion(p.getVersionId());
    std::vector<ChunkId> chunks = OrderChunks(p.getChunks());
    auto handler = handlers_.replicate;
    return jobs_
        .Run<Result<uint64_t>>(
            [handler, ns, name, version, chunks] { return handler(ns, name, version, chunks); })
        .then([c](Result<uint64_t> r) mutable {
          ThrowIfError(r.status());
          c.getResults().setBytesFromPeers(*r);
        });
  }

 private:
  const ControlHandlers& handlers_;
  JobThreads& jobs_;
};

}  // namespace

std::string NodeName(const AgentOptions& o) {
  if (!o.name.empty()) return o.name;
  char buf[256] = "";
  ::gethostname(buf, sizeof(buf) - 1);
  return buf[0] ? buf : "agent";
}

TrackerLink::TrackerLink(kj::AsyncIoContext& io, const AgentOptions& options,
                         TrackerEndpoint tracker, uint16_t peer_port, ControlHandlers handlers,
                         RevocationList& revocations, LinkHooks hooks)
    : io_(io),
      options_(options),
      tracker_(std::move(tracker)),
      peer_port_(peer_port),
      hooks_(std::move(hooks)),
      handlers_(std::move(handlers)),
      revocations_(revocations),
      peer_key_(GeneratePeerKey()) {}

int64_t TrackerLink::TakePeerIdentity(const std::string& ca_pem, bool auth_only,
                                      const IssuedCert& cert) {
  peer_ca_ = ca_pem;
  peer_auth_only_ = auth_only;
  PeerIdentity id;
  if (!ca_pem.empty()) {
    id.ca_pem = ca_pem;
    id.auth_only = auth_only;
    id.cert_pem = cert.cert_pem;
    id.key_pem = peer_key_->private_key_pem;
    id.not_after_ms = cert.not_after_ms;
  }
  if (handlers_.peer_identity) {
    Status s = handlers_.peer_identity(id);
    if (!s.ok()) Log(LogLevel::kError, "peer.identity_refused", {{"error", s.ToString()}});
  }
  if (ca_pem.empty()) return 0;
  // Renew when two thirds of the remaining life have passed, and never
  // more often than once a second.
  const int64_t now = NowMs();
  return now + std::max<int64_t>(1000, (cert.not_after_ms - now) * 2 / 3);
}

kj::Promise<void> TrackerLink::RenewLoop(proto::AgentSession::Client session, int64_t renew_at_ms) {
  if (renew_at_ms == 0) return kj::NEVER_DONE;
  const int64_t wait = std::max<int64_t>(0, renew_at_ms - NowMs());
  return io_.provider->getTimer()
      .afterDelay(wait * kj::MILLISECONDS)
      .then([this, session]() mutable {
        auto req = session.renewPeerCertRequest();
        req.setToken(options_.token);
        req.setPeerKey(peer_key_->public_key_pem);
        return req.send().then(
            [this](capnp::Response<proto::AgentSession::RenewPeerCertResults> r) {
              return TakePeerIdentity(peer_ca_, peer_auth_only_, ReadPeerCert(r.getPeerCert()));
            },
            [](kj::Exception&& e) -> int64_t {
              Status s = StatusFromException(e, "renew peer certificate");
              Log(LogLevel::kError, "peer.cert_renew_failed",
                  {{"error", s.ToString()}, {"retry_ms", int64_t{10000}}});
              return NowMs() + 10000;
            });
      })
      .then([this, session](int64_t next) mutable { return RenewLoop(session, next); });
}

std::string TrackerLink::agent_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return agent_id_;
}

std::shared_ptr<const HashRing> TrackerLink::ring() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_;
}

kj::Promise<void> TrackerLink::RefreshRing(proto::AgentSession::Client session, uint64_t since) {
  auto req = session.ringRequest();
  req.setSinceEpoch(since);
  return req.send().then([this, since](capnp::Response<proto::AgentSession::RingResults> r) {
    if (r.getDelta()) {
      TakeRingDelta(proto::AgentSession::RingResults::Reader(r), since, r.getEpoch());
      return;
    }
    // The snapshot, copied to aligned words, then the changes after it.
    auto bytes = r.getSnapshot();
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
    std::memcpy(words.begin(), bytes.begin(), words.size() * sizeof(capnp::word));
    std::vector<RingMember> members;
    if (words.size() > 0) {
      capnp::FlatArrayMessageReader message(words);
      auto snapshot = message.getRoot<proto::RingSnapshot>().getMembers();
      members.reserve(snapshot.size());
      for (auto m : snapshot) members.push_back({m.getAgentId(), m.getWeight()});
    }
    HashRing at_snapshot(std::move(members), r.getSnapshotEpoch());
    std::vector<RingChange> changes;
    for (auto c : r.getChanges()) changes.push_back({c.getAgentId(), c.getWeight(), c.getLeft()});
    auto ring = std::make_shared<const HashRing>(at_snapshot.Apply(changes, r.getEpoch()));
    ring_of_session_ = true;
    std::lock_guard<std::mutex> lock(mu_);
    ring_ = std::move(ring);
  });
}

bool TrackerLink::ring_current() const {
  std::shared_ptr<const HashRing> held = ring();
  return held != nullptr && ring_of_session_ && held->epoch() == epoch_;
}

void TrackerLink::CatchUpRing() {
  std::lock_guard<std::mutex> lock(mu_);
  if (wake_.get() != nullptr && wake_->isWaiting()) wake_->fulfill();
}

template <typename Reader>
void TrackerLink::TakeRingDelta(Reader delta, uint64_t since, uint64_t epoch) {
  std::shared_ptr<const HashRing> old = ring();
  // A delta after a ring this link no longer holds: never guess; the ring
  // stays behind the epoch, so the next heartbeat asks again.
  if (old == nullptr || old->epoch() != since) return;
  std::vector<RingChange> changes;
  changes.reserve(delta.getChanges().size());
  for (auto c : delta.getChanges()) changes.push_back({c.getAgentId(), c.getWeight(), c.getLeft()});
  auto ring = std::make_shared<const HashRing>(old->Apply(changes, epoch));
  std::lock_guard<std::mutex> lock(mu_);
  ring_ = std::move(ring);
}

void TrackerLink::TakeRevocations(proto::RevocationDelta::Reader delta) {
  std::vector<Revocation> list;
  for (auto in : delta.getRevocations()) {
    Result<Revocation> r = ReadRevocation(in);
    if (!r.ok()) {
      Log(LogLevel::kWarn, "token.revocation_refused", {{"error", r.status().ToString()}});
      continue;
    }
    list.push_back(std::move(r).value());
  }
  if (delta.getReset()) {
    revocations_.Reset(list);
    revocations_.set_source(delta.getSource());
  } else if (!list.empty()) {
    revocations_.Add(list);
  } else {
    return;
  }
  Log(LogLevel::kInfo, "token.revocations",
      {{"added", static_cast<int64_t>(list.size())},
       {"reset", delta.getReset()},
       {"generation", revocations_.generation()}});
}

void TrackerLink::SetSession(kj::Maybe<proto::AgentSession::Client> session) {
  bool had = session_ != nullptr;
  session_ = kj::mv(session);
  if ((had || session_ != nullptr) && hooks_.session_changed) hooks_.session_changed();
}

kj::Promise<void> TrackerLink::Run() {
  return ConnectAndServe().then(
      [this]() -> kj::Promise<void> {
        // The session ended (tracker gone); start over.
        registered_ = false;
        ring_of_session_ = false;
        SetSession(nullptr);
        return io_.provider->getTimer().afterDelay(backoff_ms_ * kj::MILLISECONDS).then([this] {
          return Run();
        });
      },
      [this](kj::Exception&& e) -> kj::Promise<void> {
        registered_ = false;
        ring_of_session_ = false;
        SetSession(nullptr);
        Status s = StatusFromException(e, "tracker " + tracker_.address);
        Log(LogLevel::kWarn, "tracker.unreachable",
            {{"error", s.ToString()}, {"retry_ms", backoff_ms_}});
        uint32_t wait = backoff_ms_;
        backoff_ms_ = std::min<uint32_t>(backoff_ms_ * 2, 10000);
        rpc_ = nullptr;
        network_ = nullptr;
        stream_ = nullptr;
        return io_.provider->getTimer().afterDelay(wait * kj::MILLISECONDS).then([this] {
          return Run();
        });
      });
}

kj::Promise<void> TrackerLink::ConnectAndServe() {
  return DialTracker(*io_.provider, tracker_).then([this](kj::Own<kj::AsyncIoStream> stream) {
    stream_ = kj::mv(stream);
    network_ = kj::heap<capnp::TwoPartyVatNetwork>(*stream_, capnp::rpc::twoparty::Side::CLIENT);
    rpc_ = kj::heap<capnp::RpcSystem<capnp::rpc::twoparty::VatId>>(capnp::makeRpcClient(*network_));
    capnp::word scratch[4];
    memset(scratch, 0, sizeof(scratch));
    capnp::MallocMessageBuilder vat_msg(scratch);
    auto vat = vat_msg.getRoot<capnp::rpc::twoparty::VatId>();
    vat.setSide(capnp::rpc::twoparty::Side::SERVER);
    auto gateway = rpc_->bootstrap(vat).castAs<proto::Gateway>();
    auto req = gateway.registerAgentRequest();
    req.setToken(options_.token);
    auto info = req.initInfo();
    info.setName(NodeName(options_));
    info.setPeerPort(peer_port_);
    info.setPeerSessions(static_cast<uint16_t>(PeerSessionsOf(options_)));
    info.setZone(options_.zone);
    info.setCacheBytes(options_.cache_bytes);
    info.setVersion("0.1.0");
    info.setAway(hooks_.away && hooks_.away());
    auto labels = info.initLabels(static_cast<unsigned>(options_.labels.size()));
    for (size_t i = 0; i < options_.labels.size(); ++i)
      labels.set(static_cast<unsigned>(i), options_.labels[i]);
    req.setControl(kj::heap<AgentControlImpl>(handlers_, jobs_));
    if (!peer_key_.ok()) ThrowIfError(peer_key_.status().WithContext("peer key"));
    req.setPeerKey(peer_key_->public_key_pem);
    auto disconnected = network_->onDisconnect();
    return req.send()
        .then([this, gateway](capnp::Response<proto::Gateway::RegisterAgentResults> r) mutable {
          {
            std::lock_guard<std::mutex> lock(mu_);
            agent_id_ = r.getAgentId();
          }
          // A ring held from before is kept for while the tracker is away,
          // but its epochs are another session's: never current, not even
          // for the moment between registering and the first ring().
          ring_of_session_ = false;
          epoch_ = r.getEpoch();
          registered_ = true;
          if (ever_registered_ && handlers_.registered_again) handlers_.registered_again();
          ever_registered_ = true;
          backoff_ms_ = 500;
          Log(LogLevel::kInfo, "tracker.registered",
              {{"agent", std::string(r.getAgentId())},
               {"tracker", tracker_.address},
               {"epoch", r.getEpoch()}});
          const int64_t renew_at =
              TakePeerIdentity(r.getPeerCa(), r.getPeerAuthOnly(), ReadPeerCert(r.getPeerCert()));
          auto session = r.getSession();
          // The tracker holds none of this agent's swarm entries yet.
          SetSession(session);
          uint32_t interval = r.getHeartbeatMs();
          const bool follow = !hooks_.follows_ring || hooks_.follows_ring();
          return (follow ? RefreshRing(session, 0) : kj::Promise<void>(kj::READY_NOW))
              .then(
                  [this, session, interval]() mutable { return HeartbeatLoop(session, interval); })
              .exclusiveJoin(RenewLoop(session, renew_at));
        })
        .exclusiveJoin(kj::mv(disconnected));
  });
}

kj::Promise<void> TrackerLink::HeartbeatLoop(proto::AgentSession::Client session,
                                             uint32_t interval_ms) {
  auto wake = kj::newPromiseAndCrossThreadFulfiller<void>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = kj::mv(wake.fulfiller);
  }
  return io_.provider->getTimer()
      .afterDelay(interval_ms * kj::MILLISECONDS)
      .exclusiveJoin(kj::mv(wake.promise))
      .then([this, session, interval_ms]() mutable {
        auto req = session.heartbeatRequest();
        FillAgentStats(handlers_.stats(), req.initStats());
        req.setHeartbeatMs(interval_ms);
        req.setRevocationsSeen(revocations_.generation());
        req.setRevocationsSource(revocations_.source());
        // Following, the link names the epoch it holds, and the reply
        // brings what changed since; idle, it names none, and gets none.
        const bool follow = !hooks_.follows_ring || hooks_.follows_ring();
        std::shared_ptr<const HashRing> held = this->ring();
        const uint64_t ring_seen =
            follow && ring_of_session_ && held != nullptr ? held->epoch() : 0;
        req.setRingSeen(ring_seen);
        return req.send().then(
            [this, session, interval_ms, follow,
             ring_seen](capnp::Response<proto::AgentSession::HeartbeatResults> r) mutable {
              epoch_ = r.getEpoch();
              if (!hooks_.takes_revocations || hooks_.takes_revocations()) {
                TakeRevocations(r.getRevocations());
              }
              if (r.getRing().getDelta()) TakeRingDelta(r.getRing(), ring_seen, r.getEpoch());
              std::shared_ptr<const HashRing> ring = this->ring();
              kj::Promise<void> refresh = kj::READY_NOW;
              if (follow && (!ring_of_session_ || ring == nullptr || ring->epoch() != epoch_)) {
                refresh = RefreshRing(session, ring_of_session_ && ring ? ring->epoch() : 0);
              }
              // The tracker may tell a longer interval as its fleet grows.
              uint32_t next_ms = r.getHeartbeatMs() > 0 ? r.getHeartbeatMs() : interval_ms;
              if (next_ms != interval_ms) {
                Log(LogLevel::kInfo, "tracker.heartbeat_interval",
                    {{"tracker", tracker_.address}, {"ms", uint64_t{next_ms}}});
              }
              return refresh.then(
                  [this, session, next_ms]() mutable { return HeartbeatLoop(session, next_ms); });
            });
      });
}

}  // namespace shoal
