// TrackerLink: the agent's membership with the tracker. Registers over Cap'n
// Proto, heartbeats, and serves AgentControl to the tracker on the same
// connection. When the tracker is unreachable or restarts, it keeps
// retrying with backoff; running transfers are not affected.
//
// It also keeps the agent's peer certificate: it makes a key pair once,
// sends the public half at registration, and asks for a new certificate
// when two thirds of the last one's life have passed.
//
// And it relays the agent's BitTorrent announces. libtorrent announces to
// a loopback-only HTTP listener whose URL holds a random key. Only what
// changes reaches the tracker (swarm_reports.h): the changes of a short
// tick go together in one AgentSession.announceBatch over the registered
// session, the rest is answered from the tracker's last reply. A new
// session sends every torrent's state again. Announces thus never carry a
// token in a URL, share the one connection to the tracker, and are
// encrypted whenever it is (--tracker-ca).
//
// And it keeps the agent's copy of the tracker's token revocations: each
// heartbeat sends the generation it holds and gets the revocations after
// it, so the read endpoint refuses a revoked token within one heartbeat.
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
#include "daemon/swarm_reports.h"
#include "p2p/engine_options.h"
#include "shoal/agent_stats.h"
#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"
#include "shoal/peer_cert.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/server/http_server.h"
#include "shoal/token_revocations.h"
#include "shoal/version_id.h"
#include "task_error_log.h"

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

class TrackerLink {
 public:
  // `revocations` is brought up to date by every heartbeat; it must
  // outlive the link.
  TrackerLink(kj::AsyncIoContext& io, const AgentOptions& options, uint16_t peer_port,
              ControlHandlers handlers, RevocationList& revocations);

  // Listens for announces on 127.0.0.1 (a free port). Call before Run(),
  // on the event loop's thread.
  Status StartRelay();
  // Answers every pending announce with a failure and stops listening; on
  // the event loop's thread, before the loop goes.
  void StopRelay();

  // Runs until the promise is dropped.
  kj::Promise<void> Run();

  bool registered() const { return registered_; }
  uint64_t epoch() const { return epoch_; }
  std::string agent_id() const;
  // Where this agent's torrents announce: the relay's URL (with the zone);
  // empty until StartRelay.
  std::string announce_url() const;
  // The ring of chunk owners as of the last epoch seen; empty until the
  // first registration, and kept (stale) while the tracker is unreachable.
  std::shared_ptr<const HashRing> ring() const;
  // libtorrent announces answered without a call, and swarm changes sent.
  uint64_t announces_answered_locally() const { return reports_.answered_locally(); }
  uint64_t swarm_changes_sent() const { return reports_.changes_sent(); }

 private:
  kj::Promise<void> ConnectAndServe();
  kj::Promise<void> HeartbeatLoop(proto::AgentSession::Client session, uint32_t interval_ms);
  kj::Promise<void> RefreshRing(proto::AgentSession::Client session);
  // Applies a heartbeat's revocations to revocations_.
  void TakeRevocations(proto::RevocationDelta::Reader delta);
  // Hands the identity in a registration or renewal to the handler, and
  // returns when the certificate should be renewed (0: never).
  int64_t TakePeerIdentity(const std::string& ca_pem, const IssuedCert& cert);
  // Renews the certificate at `renew_at_ms` and then again, for as long as
  // the session lasts. Never fails: a refusal is logged and retried.
  kj::Promise<void> RenewLoop(proto::AgentSession::Client session, int64_t renew_at_ms);

  // Takes one relayed announce to reports_. Any thread; `done` is called
  // exactly once, on this thread, the loop's or, once stopped, this one.
  void RelayAnnounce(const HttpRequest& req, AnnounceDone done);
  // Wakes RelayLoop. Any thread.
  void WakeRelay();
  // Waits to be woken, lets more changes gather for a moment, sends them
  // in batches, and again.
  kj::Promise<void> RelayLoop();
  void SendQueued();

  kj::AsyncIoContext& io_;
  const AgentOptions& options_;
  const uint16_t peer_port_;
  ControlHandlers handlers_;
  RevocationList& revocations_;
  const Result<PeerKey> peer_key_;  // made once; an error is reported at registration
  std::string peer_ca_;             // event loop only: the CA of the last registration
  uint32_t backoff_ms_ = 500;

  // Connection state, owned by the event loop.
  kj::Own<kj::AsyncIoStream> stream_;
  kj::Own<capnp::TwoPartyVatNetwork> network_;
  kj::Own<capnp::RpcSystem<capnp::rpc::twoparty::VatId>> rpc_;

  // The session while registered (event loop only), for relayed announces.
  kj::Maybe<proto::AgentSession::Client> session_;
  // Declared before the batches in flight, which refer to it.
  SwarmReports reports_;       // what the tracker knows of this agent's swarms
  int64_t last_batch_ms_ = 0;  // when RelayLoop last sent; event loop only
  std::unique_ptr<HttpServer> relay_server_;
  std::string relay_url_;  // set once by StartRelay
  kj::Own<TaskErrorLog> relay_errors_;
  kj::Own<kj::TaskSet> relay_sends_;  // batches in flight; event loop only
  kj::Promise<void> relay_loop_ = nullptr;
  std::mutex relay_mu_;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> relay_wake_;  // protected; null while awake
  bool relay_stopped_ = false;                                 // protected by relay_mu_

  std::atomic<bool> registered_{false};
  bool ever_registered_ = false;  // event loop only
  std::atomic<uint64_t> epoch_{0};
  mutable std::mutex mu_;
  std::string agent_id_;                  // protected by mu_
  std::string announce_url_;              // protected by mu_
  std::shared_ptr<const HashRing> ring_;  // protected by mu_
  JobThreads jobs_;                       // fetch orders; declared last, so joined first
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_TRACKER_LINK_H_
