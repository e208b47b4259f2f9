// TrackerLink: the agent's membership with one tracker. Registers over Cap'n
// Proto, heartbeats, and serves AgentControl to the tracker on the same
// connection. When the tracker is unreachable or restarts, it keeps
// retrying with backoff; running transfers are not affected. An agent of a
// fleet holds one link per tracker (tracker_fleet.h).
//
// It also keeps the agent's peer certificate: it makes a key pair once,
// sends the public half at registration, and asks for a new certificate
// when two thirds of the last one's life have passed.
//
// Its session carries the agent's swarm changes (announce_relay.h): the
// link reports when a session begins or ends.
//
// And it keeps the agent's copy of the tracker's token revocations: each
// heartbeat sends the generation it holds and gets the revocations after
// it, so the read endpoint refuses a revoked token within one heartbeat.
// Of a fleet's links, only the one its hooks name takes them in: the
// trackers share one registry, but each numbers its list from its own
// source.
//
// Thread-safety: Run() and the promise it returns live on one kj event loop;
// the accessors are safe from any thread.
#ifndef SHOAL_AGENT_DAEMON_TRACKER_LINK_H_
#define SHOAL_AGENT_DAEMON_TRACKER_LINK_H_

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/agent_options.h"
#include "daemon/job_threads.h"
#include "p2p/engine_options.h"
#include "shoal/agent_stats.h"
#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"
#include "shoal/peer_cert.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/token_revocations.h"
#include "shoal/tracker_endpoint.h"
#include "shoal/version_id.h"

namespace shoal {

struct FetchOrderResult {
  uint32_t fetched = 0;
  uint64_t bytes = 0;
};
struct PrefetchResult {
  uint64_t bytes = 0, from_peers = 0, from_origin = 0;
};

// What the tracker can ask of this agent. The blocking ones run on a
// thread of their own per order.
struct ControlHandlers {
  std::function<AgentStats()> stats;
  // Fetch `chunks` of ns/name's `version` from the origin and seed them.
  std::function<Result<FetchOrderResult>(const std::string& ns, const std::string& name,
                                         const VersionId& version,
                                         const std::vector<ChunkId>& chunks, bool takeover)>
      fetch;
  // Take the whole version into the cache from the swarm.
  std::function<Result<PrefetchResult>(const std::string& ns, const std::string& name,
                                       const VersionId& version)>
      prefetch;
  // Take `chunks` from the swarm and hold them as owned; the bytes from peers.
  std::function<Result<uint64_t>(const std::string& ns, const std::string& name,
                                 const VersionId& version, const std::vector<ChunkId>& chunks)>
      replicate;
  // Registered again after losing the tracker (a restart, say). The link
  // itself sends every swarm entry again; this lets libtorrent announce
  // every torrent now, so leechers hear of the peers that came back.
  std::function<void()> registered_again;
  // How peers are admitted, from each registration and each renewal of the
  // agent's peer certificate (an empty CA: plain peers). An error is
  // logged; the link goes on.
  std::function<Status(const PeerIdentity&)> peer_identity;
};

// How a link tells its fleet what happens to it; called on the event loop.
struct LinkHooks {
  std::function<void()> session_changed;    // a session began or ended
  std::function<bool()> takes_revocations;  // whether heartbeats update the list
  std::function<bool()> away;               // registers as away (not the agent's home)
  // Whether heartbeats follow the ring's changes now; null: always.
  std::function<bool()> follows_ring;
};

// The agent's node name, as it registers (options.name, else the host name).
std::string NodeName(const AgentOptions& o);

class TrackerLink {
 public:
  // A link to the tracker at `tracker` (one address). `revocations` is
  // brought up to date by heartbeats while hooks.takes_revocations says
  // so; it must outlive the link.
  TrackerLink(kj::AsyncIoContext& io, const AgentOptions& options, TrackerEndpoint tracker,
              uint16_t peer_port, ControlHandlers handlers, RevocationList& revocations,
              LinkHooks hooks);

  // Runs until the promise is dropped.
  kj::Promise<void> Run();

  bool registered() const { return registered_; }
  uint64_t epoch() const { return epoch_; }
  std::string agent_id() const;
  const std::string& address() const { return tracker_.address; }
  // The session while registered; on the event loop's thread only.
  // Null while not registered.
  proto::AgentSession::Client* session() {
    KJ_IF_MAYBE (s, session_) {
      return s;
    }
    return nullptr;
  }
  // The ring of chunk owners as of the last epoch followed; empty until
  // the first ring is fetched, kept (stale) while the tracker is
  // unreachable, and not followed while hooks.follows_ring says no.
  std::shared_ptr<const HashRing> ring() const;
  // Brings the next heartbeat forward, so a link that stopped following
  // the ring catches up now. Safe from any thread.
  void CatchUpRing();
  // Whether ring() is this session's ring at the last epoch a heartbeat
  // told: caught up. Safe from any thread.
  bool ring_current() const;

 private:
  kj::Promise<void> ConnectAndServe();
  kj::Promise<void> HeartbeatLoop(proto::AgentSession::Client session, uint32_t interval_ms);
  // `since`: the epoch of the ring this session gave before, to get only
  // the changes after it; 0 (a new session) for every member.
  kj::Promise<void> RefreshRing(proto::AgentSession::Client session, uint64_t since);
  // Applies a delta (a heartbeat's RingDelta, or ring()'s results) to the
  // ring held at epoch `since`, making the ring at `epoch`; nothing if the
  // ring held is not at `since`.
  template <typename Reader>
  void TakeRingDelta(Reader delta, uint64_t since, uint64_t epoch);
  // Applies a heartbeat's revocations to revocations_.
  void TakeRevocations(proto::RevocationDelta::Reader delta);
  // Hands the identity in a registration or renewal to the handler, and
  // returns when the certificate should be renewed (0: never).
  int64_t TakePeerIdentity(const std::string& ca_pem, bool auth_only, const IssuedCert& cert);
  // Renews the certificate at `renew_at_ms` and then again, for as long as
  // the session lasts. Never fails: a refusal is logged and retried.
  kj::Promise<void> RenewLoop(proto::AgentSession::Client session, int64_t renew_at_ms);

  // Records the session (or its end) and tells the hooks.
  void SetSession(kj::Maybe<proto::AgentSession::Client> session);

  kj::AsyncIoContext& io_;
  const AgentOptions& options_;
  const TrackerEndpoint tracker_;
  const uint16_t peer_port_;
  const LinkHooks hooks_;
  ControlHandlers handlers_;
  RevocationList& revocations_;
  const Result<PeerKey> peer_key_;  // made once; an error is reported at registration
  std::string peer_ca_;             // event loop only: the CA of the last registration
  bool peer_auth_only_ = false;     // event loop only: ... and whether peers skip TLS
  uint32_t backoff_ms_ = 500;

  // Connection state, owned by the event loop.
  kj::Own<kj::AsyncIoStream> stream_;
  kj::Own<capnp::TwoPartyVatNetwork> network_;
  kj::Own<capnp::RpcSystem<capnp::rpc::twoparty::VatId>> rpc_;

  // The session while registered (event loop only), for swarm batches.
  kj::Maybe<proto::AgentSession::Client> session_;

  std::atomic<bool> registered_{false};
  bool ever_registered_ = false;  // event loop only
  std::atomic<uint64_t> epoch_{0};
  mutable std::mutex mu_;
  std::string agent_id_;                  // protected by mu_
  std::shared_ptr<const HashRing> ring_;  // protected by mu_
  // Fulfilled by CatchUpRing to end the heartbeat loop's wait early;
  // replaced (on the event loop) for each wait. Protected by mu_.
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake_;
  // Whether ring_ came from this session (its epochs are this session's);
  // written on the event loop.
  std::atomic<bool> ring_of_session_{false};
  JobThreads jobs_;  // fetch orders; declared last, so joined first
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_TRACKER_LINK_H_
