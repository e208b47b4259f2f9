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
// a loopback-only HTTP listener whose URL holds a random key; each
// announce goes on to the tracker over the registered session, with the
// agent's token added. Announces thus never carry a token in a URL, share
// the one connection to the tracker, and are encrypted whenever it is
// (--tracker-ca).
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
  // Registered again after losing the tracker (a restart, say): its swarms
  // start empty, and seeders announce only every few minutes, so announce
  // every torrent now.
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

  // A relayed announce's tracker answer: its HTTP status and bencoded body.
  struct AnnounceReply {
    int status = 0;
    std::string body;
  };
  using AnnounceDone = std::function<void(Result<AnnounceReply>)>;
  // Queues the announce `query` for the event loop. Any thread; `done` is
  // called exactly once, on the loop's thread or, once stopped, this one.
  void QueueAnnounce(std::string query, AnnounceDone done);
  // Sends what is queued, then waits to be woken by QueueAnnounce.
  kj::Promise<void> RelayLoop();
  void SendAnnounce(std::string query, AnnounceDone done);

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
  std::unique_ptr<HttpServer> relay_server_;
  std::string relay_url_;  // set once by StartRelay
  kj::Own<TaskErrorLog> relay_errors_;
  kj::Own<kj::TaskSet> relay_sends_;  // announces in flight; event loop only
  kj::Promise<void> relay_loop_ = nullptr;
  struct QueuedAnnounce {
    std::string query;
    AnnounceDone done;
  };
  std::mutex relay_mu_;
  std::vector<QueuedAnnounce> relay_queue_;                    // protected by relay_mu_
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
