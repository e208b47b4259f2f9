// Agent: the parts of shoald, built in order and stopped in reverse: the
// chunk cache, the origin, the transfer engine, the tracker link and the
// fetch orders it carries, the HTTP routes (reads, /metrics, /healthz) and
// the local control socket.
//
// Thread-safety: Open() and Run() are called on one thread, which then owns
// the kj event loop; the parts run threads of their own.
#ifndef SHOAL_AGENT_DAEMON_AGENT_H_
#define SHOAL_AGENT_DAEMON_AGENT_H_

#include <kj/async-io.h>

#include <atomic>
#include <memory>
#include <optional>

#include "daemon/agent_options.h"
#include "daemon/fetch_orders.h"
#include "daemon/job_threads.h"
#include "daemon/pull_job.h"
#include "daemon/tracker_fleet.h"
#include "fetch/chunk_fetcher.h"
#include "p2p/eviction_relay.h"
#include "p2p/torrent_engine.h"
#include "read/read_service.h"
#include "shoal/chunk_store.h"
#include "shoal/origin.h"
#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"
#include "shoal/status.h"

namespace shoal {

class Agent {
 public:
  // Opens the cache, the origin (if options.origin names one) and the
  // transfer engine, and declares the HTTP routes; listens on nothing yet.
  // REQUIRES: options.Validate() is OK; SIGTERM and SIGINT were captured
  // (kj::UnixEventPort::captureSignal) before any thread started, so the
  // threads started here inherit the blocked mask.
  static Result<std::unique_ptr<Agent>> Open(const AgentOptions& options);

  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Listens (HTTP, the unix socket if set, the control socket), writes the
  // port file if set, keeps the tracker link, and serves until SIGTERM or
  // SIGINT. Then every job is told to stop and given up to 5 s, and the
  // reads, the HTTP servers and the engine stop. An error if a listener
  // cannot be had.
  Status Run();

 private:
  Agent(const AgentOptions& options, std::shared_ptr<EvictionRelay> relay,
        std::unique_ptr<ChunkStore> store, std::unique_ptr<Origin> origin,
        std::unique_ptr<TorrentEngine> engine, const HttpServerOptions& http,
        const std::optional<HttpServerOptions>& https, const std::optional<HttpServerOptions>& hub);

  AgentStats Stats();
  // Unavailable while the link is not registered with the tracker.
  Status Health() const;
  // What the tracker may order: fetch, replicate and prefetch run on the
  // link's own threads.
  ControlHandlers TrackerOrders();
  Status ServeControl(kj::Promise<void>* served);
  void WritePortFile();
  void LogStart();
  // Returns on SIGTERM, SIGINT, or when the control socket's promise ends.
  void WaitForStop(kj::Promise<void> control);
  void Stop();

  // Built in this order, destroyed in reverse. Each part is given only the
  // parts declared before it.
  const AgentOptions options_;
  std::shared_ptr<EvictionRelay> relay_;  // evictions reach the engine while attached
  std::unique_ptr<ChunkStore> store_;
  std::unique_ptr<Origin> origin_;  // null: no origin
  std::unique_ptr<TorrentEngine> engine_;
  // Every origin read of pulls, reads and orders, and the hand-over of
  // what they fetch to the engine.
  std::unique_ptr<ChunkFetcher> fetcher_;
  kj::AsyncIoContext io_;

  PullCounters counters_;
  std::atomic<bool> stopping_{false};  // set on SIGTERM: every job ends at its next poll
  PullContext pulls_;                  // the template of every pull; no announce URL
  JobThreads control_jobs_;            // pulls and seeds from the control socket
  // The one exception to the order above: the orders ask link_ for the
  // announce URL, the ring and the agent's ID, but only while an order runs, and orders arrive
  // through link_ once it runs. Declared before link_, whose threads run the orders and are joined
  // before the orders go.
  FetchOrders orders_;
  RevocationList revocations_;  // the tracker's, as of the last heartbeat
  TrackerFleet link_;
  std::unique_ptr<MetricsRegistry> metrics_;
  HttpServer http_;
  ReadService reads_;
  std::unique_ptr<HttpServer> http_unix_;  // the same routes on a unix socket, for pods
  std::unique_ptr<HttpServer> https_;      // ... and over TLS, for pods on other nodes
  std::unique_ptr<HttpServer> hub_;        // the hub API (--hub-listen), or null
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_AGENT_H_
