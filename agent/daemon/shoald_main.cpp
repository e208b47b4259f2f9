// shoald: the Shoal agent. One per node: a chunk cache, a BitTorrent peer,
// origin fallback, and a local control socket for `shoal pull`.
#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <malloc.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "daemon/agent_options.h"
#include "daemon/fetch_orders.h"
#include "daemon/local_control.h"
#include "daemon/pull_job.h"
#include "daemon/read_origin.h"
#include "daemon/tracker_link.h"
#include "kj_status.h"
#include "p2p/eviction_relay.h"
#include "p2p/torrent_engine.h"
#include "read/read_service.h"
#include "shoal/byte_size.h"
#include "shoal/chunk_store.h"
#include "shoal/host_port.h"
#include "shoal/log.h"
#include "shoal/origin.h"
#include "shoal/server/effective_config.h"
#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"
#include "shoal/server/standard_routes.h"
#include "shoal/store_options.h"

namespace shoal {
namespace {

void AddMetrics(MetricsRegistry& metrics, ChunkStore& store, TorrentEngine& engine,
                PullCounters& pulls, Origin* origin, TrackerLink& link) {
  metrics.AddCollector([&, origin](MetricsWriter& w) {
    StoreStats s = store.Stats();
    w.AddGauge("shoal_agent_cache_bytes", "Bytes in the chunk cache",
               static_cast<double>(s.used_bytes));
    w.AddGauge("shoal_agent_cache_capacity_bytes", "Cache budget",
               static_cast<double>(s.capacity_bytes));
    w.AddGauge("shoal_agent_cache_chunks", "Chunks in the cache", static_cast<double>(s.chunks));
    w.AddGauge("shoal_agent_cache_pinned_bytes",
               "Cache bytes pinned by running pulls, reads and orders",
               static_cast<double>(s.pinned_bytes));
    w.AddGauge("shoal_agent_cache_reserved_bytes", "Cache bytes reserved by chunk writes in flight",
               static_cast<double>(s.reserved_bytes));
    w.AddCounter("shoal_agent_cache_hits_total", "Chunk lookups found in the cache", s.hits);
    w.AddCounter("shoal_agent_cache_misses_total", "Chunk lookups not in the cache", s.misses);
    w.AddCounter("shoal_agent_cache_evictions_total", "Chunks evicted", s.evictions);
    w.AddCounter("shoal_agent_cache_corrupt_total", "Chunks dropped for failing verification",
                 s.corrupt_dropped);
    EngineStats e = engine.Stats();
    w.AddCounter("shoal_agent_peer_bytes_total", "Payload bytes exchanged with peers", e.bytes_down,
                 {{"direction", "in"}});
    w.AddCounter("shoal_agent_peer_bytes_total", "Payload bytes exchanged with peers", e.bytes_up,
                 {{"direction", "out"}});
    w.AddCounter("shoal_agent_hash_failures_total", "Pieces from peers that failed their hash",
                 e.hash_failures);
    w.AddCounter("shoal_agent_peers_banned_total", "Peers banned for bad data", e.peers_banned);
    w.AddCounter("shoal_agent_peers_stalled_total",
                 "Peer connections closed for a handshake or message that crawled",
                 e.peers_stalled);
    w.AddGauge("shoal_agent_peers", "Connected peers", static_cast<double>(e.peers));
    w.AddGauge("shoal_agent_torrents", "Torrents in the engine", static_cast<double>(e.torrents));
    w.AddCounter("shoal_agent_origin_bytes_total", "Bytes fetched from the origin",
                 pulls.bytes_from_origin);
    w.AddCounter("shoal_agent_origin_chunks_total", "Chunks fetched from the origin",
                 pulls.origin_chunks);
    w.AddCounter("shoal_agent_origin_fetches_total", "Origin fetches by why this agent made them",
                 pulls.owner_fetches, {{"reason", "owner"}});
    w.AddCounter("shoal_agent_origin_fetches_total", "Origin fetches by why this agent made them",
                 pulls.takeover_fetches, {{"reason", "takeover"}});
    w.AddCounter("shoal_agent_replica_chunks_total",
                 "Chunks copied from the swarm on a replica order", pulls.replica_chunks);
    w.AddCounter("shoal_agent_pulls_total", "Pulls completed", pulls.pulls);
    w.AddCounter("shoal_agent_pull_failures_total", "Pulls that failed", pulls.pull_failures);
    w.AddGauge("shoal_agent_tracker_registered", "1 while registered with the tracker",
               link.registered() ? 1 : 0);
    w.AddGauge("shoal_agent_ring_epoch", "Membership epoch last seen",
               static_cast<double>(link.epoch()));
    if (origin != nullptr) {
      OriginCounters oc = origin->counters();
      w.AddCounter("shoal_origin_requests_total", "Origin requests, retries included",
                   oc.get.requests, {{"op", "get"}});
      w.AddCounter("shoal_origin_bytes_total", "Origin payload bytes", oc.get.bytes,
                   {{"op", "get"}});
    }
  });
}

Status Run(AgentOptions& o, const std::string& cache_size, const std::string& log_level) {
  // Before any thread starts (the store's, the engine's): captureSignal
  // blocks the signals in this thread only, and threads inherit the mask.
  // A thread started earlier would take SIGTERM's default action, killing
  // the agent without stopping the engine or removing its socket.
  kj::UnixEventPort::captureSignal(SIGTERM);
  kj::UnixEventPort::captureSignal(SIGINT);
  auto level = ParseLogLevel(log_level);
  if (!level.ok()) return level.status();
  SetLogLevel(*level);
  if (!cache_size.empty()) {
    auto bytes = ParseByteSize(cache_size);
    if (!bytes.ok()) return bytes.status().WithContext("--cache-size");
    o.cache_bytes = *bytes;
  }
  SHOAL_RETURN_IF_ERROR(o.Validate());
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);  // trimming cost page faults on every transfer
  // Peer connections, chunk files and the files pulls write all hold
  // descriptors: take what the service manager allows.
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }

  // Evictions reach the engine once it exists, and stop before it goes.
  auto relay = std::make_shared<EvictionRelay>();
  StoreOptions so;
  so.dir = o.cache_dir;
  so.capacity_bytes = o.cache_bytes;
  so.sync = o.cache_sync;
  so.on_evict = relay->Listener();
  auto store = ChunkStore::Open(so);
  if (!store.ok()) return store.status();
  std::unique_ptr<Origin> origin;
  if (!o.origin.url.empty()) {
    auto opened = OpenOrigin(o.origin);
    if (!opened.ok()) return opened.status().WithContext("open origin " + o.origin.url);
    origin = std::move(opened).value();
  }
  EngineOptions eo;
  eo.listen = o.peer_listen;
  eo.disk_threads = o.disk_threads;
  eo.handshake_timeout_s = o.peer_handshake_timeout_s;
  eo.peer_timeout_s = o.peer_timeout_s;
  eo.message_stall_s = o.peer_message_stall_s;
  auto engine = TorrentEngine::Start(eo, **store);
  if (!engine.ok()) return engine.status();
  relay->Attach(engine->get());

  auto io = kj::setupAsyncIo();
  PullCounters counters;
  auto stats = [&] {
    StoreStats s = (*store)->Stats();
    EngineStats e = (*engine)->Stats();
    AgentStatsSnapshot a;
    a.cached_bytes = s.used_bytes;
    a.cached_chunks = s.chunks;
    a.bytes_from_peers = e.bytes_down;
    a.bytes_from_origin = counters.bytes_from_origin;
    a.bytes_to_peers = e.bytes_up;
    a.torrents = static_cast<uint32_t>(e.torrents);
    a.peers = static_cast<uint32_t>(e.peers);
    return a;
  };
  std::atomic<bool> stopping{false};  // set on SIGTERM: every job ends at its next poll
  PullContext pulls{o, **store, **engine, origin.get(), "", counters, nullptr, "", &stopping};
  JobThreads control_jobs;          // pulls and seeds from the control socket
  TrackerLink* link_ptr = nullptr;  // the link outlives every order it carries
  FetchOrders orders(pulls, [&link_ptr] { return link_ptr->announce_url(); });
  ControlHandlers handlers;
  handlers.stats = stats;
  handlers.fetch = [&orders](const std::string& ns, const std::string& name,
                             const VersionId& version, const std::vector<ChunkId>& chunks,
                             bool takeover) -> Result<FetchOrderResult> {
    auto r = orders.Run(ns, name, version, chunks, takeover);
    if (!r.ok()) return r.status();
    return FetchOrderResult{static_cast<uint32_t>(r->chunks), r->bytes};
  };
  handlers.replicate = [&orders](const std::string& ns, const std::string& name,
                                 const VersionId& version,
                                 const std::vector<ChunkId>& chunks) -> Result<uint64_t> {
    constexpr int64_t kReplicaWaitMs = 60000;
    return orders.Replicate(ns, name, version, chunks, kReplicaWaitMs);
  };
  handlers.prefetch = [&pulls, &link_ptr](const std::string& ns, const std::string& name,
                                          const VersionId& version) -> Result<PrefetchResult> {
    PullContext job = pulls;
    job.announce_url = link_ptr->announce_url();
    job.ring = [&link_ptr] { return link_ptr->ring(); };
    job.self_id = link_ptr->agent_id();
    PullRequest req;
    req.ref = ns + "/" + name + ":" + version.ToHex();
    req.token = pulls.options.token;
    auto r = RunPull(job, req, nullptr);
    if (!r.ok()) return r.status();
    return PrefetchResult{r->total_bytes, r->bytes_from_peers, r->bytes_from_origin};
  };
  handlers.registered_again = [&engine] { (*engine)->ReannounceAll(); };
  TrackerLink link(io, o, (*engine)->listen_port(), std::move(handlers));
  link_ptr = &link;

  MetricsRegistry metrics;
  AddMetrics(metrics, **store, **engine, counters, origin.get(), link);
  metrics.AddCollector([&control_jobs](MetricsWriter& w) {
    w.AddGauge("shoal_agent_control_jobs",
               "Pulls and seeds running for callers of the control socket",
               static_cast<double>(control_jobs.Running()));
  });
  HttpServerOptions ho;
  SHOAL_RETURN_IF_ERROR(SplitHostPort(o.http_listen, &ho.address, &ho.port));
  ho.threads = o.http_threads;
  HttpServer http(ho);
  auto health = [&] {
    if (!link.registered()) return Status::Unavailable("not registered with tracker " + o.tracker);
    return Status::OK();
  };
  AddStandardRoutes(http, metrics, health);
  ReadServiceOptions ro;
  ro.tracker = o.tracker;
  ro.agent_token = o.token;
  ro.anonymous_loopback = o.read_anonymous;
  ro.cache_ms = o.read_cache_ms;
  ro.fetch.origin_wait_ms = o.read_origin_wait_ms;
  ro.fetch.read_ahead_pieces = o.read_ahead_pieces;
  ro.first_byte_timeout_ms = o.read_first_byte_timeout_ms;
  ro.fetch.origin_parallelism = o.origin_parallelism;
  ReadService reads(
      ro, **store, **engine, origin.get(), [&link] { return link.announce_url(); }, metrics);
  reads.fetcher().set_request_origin(OwnerPacedOrigin(o, **store));
  reads.AddRoutes(http);
  SHOAL_RETURN_IF_ERROR(http.Start().WithContext("listen on " + o.http_listen));
  std::unique_ptr<HttpServer> http_unix;  // the same routes on a unix socket, for pods
  if (!o.http_socket.empty()) {
    HttpServerOptions uo = ho;
    uo.unix_socket = o.http_socket;
    http_unix = std::make_unique<HttpServer>(uo);
    AddStandardRoutes(*http_unix, metrics, health);
    reads.AddRoutes(*http_unix);
    SHOAL_RETURN_IF_ERROR(http_unix->Start().WithContext("listen on " + o.http_socket));
  }

  kj::Promise<void> control = nullptr;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 control = ServeLocalControl(io, o.control_socket,
                                             LocalControlDeps{pulls, link, stats, control_jobs});
               })) {
    return StatusFromException(*e, "control socket").WithContext("listen on " + o.control_socket);
  }
  if (!o.port_file.empty()) {
    std::string tmp = o.port_file + ".tmp";
    std::ofstream(tmp) << (*engine)->listen_port() << " " << http.port() << "\n";
    std::filesystem::rename(tmp, o.port_file);
  }
  Log(LogLevel::kInfo, "agent.start",
      {{"peer_port", static_cast<int64_t>((*engine)->listen_port())},
       {"http_port", static_cast<int64_t>(http.port())},
       {"http_socket", o.http_socket},
       {"cache_dir", o.cache_dir},
       {"cache_bytes", o.cache_bytes},
       {"control", o.control_socket},
       {"origin", origin ? origin->Describe() : std::string("(none)")}});

  auto tracker = link.Run().eagerlyEvaluate([](kj::Exception&& e) {
    Log(LogLevel::kError, "tracker.link_failed",
        {{"error", std::string(e.getDescription().cStr())}});
  });
  auto served = control.then([] { return 0; });
  auto signal = io.unixEventPort.onSignal(SIGTERM)
                    .exclusiveJoin(io.unixEventPort.onSignal(SIGINT))
                    .then([](siginfo_t) { return 0; });
  served.exclusiveJoin(kj::mv(signal)).wait(io.waitScope);
  Log(LogLevel::kInfo, "agent.stop", {{"jobs", static_cast<int64_t>(control_jobs.Running())}});
  // Every job polls `stopping`; the event loop keeps turning meanwhile, so
  // a job waiting on its caller through the loop is answered, not stuck.
  stopping = true;
  auto& timer = io.provider->getTimer();
  for (int i = 0; i < 500 && control_jobs.Running() > 0; ++i)
    timer.afterDelay(10 * kj::MILLISECONDS).wait(io.waitScope);
  reads.Stop();  // its waiting reads hold HTTP connections
  http.Stop();
  if (http_unix) http_unix->Stop();
  relay->Detach();
  (*engine)->Stop();
  ::unlink(o.control_socket.c_str());
  return Status::OK();
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  shoal::AgentOptions o;
  std::string cache_size = "100GiB", log_level = "info";
  bool print_config = false;
  CLI::App app{"shoald: the Shoal agent"};
  app.set_config("--config", "", "read options from this TOML/INI file");
  app.allow_config_extras(CLI::config_extras_mode::error);  // a misspelt key is an error
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "shoald: error: " + std::string(e.what()) + "\n";
  });
  app.add_flag("--print-config", print_config,
               "print the effective configuration as a config file and exit")
      ->configurable(false);
  app.add_option("--name", o.name, "node name; default: the host name");
  app.add_option("--zone", o.zone, "zone label; same-zone peers are preferred");
  app.add_option("--tracker", o.tracker, "tracker RPC host:port")
      ->envname("SHOAL_TRACKER")
      ->capture_default_str();
  app.add_option("--token", o.token,
                 "agent token (shoal-tracker token create --ns '*' --role read)")
      ->envname("SHOAL_AGENT_TOKEN");
  app.add_option("--cache-dir", o.cache_dir, "chunk cache folder")->capture_default_str();
  app.add_option("--cache-size", cache_size, "cache budget, e.g. 200GiB")->capture_default_str();
  app.add_option("--peer-listen", o.peer_listen, "BitTorrent listen address")
      ->capture_default_str();
  app.add_option("--http-listen", o.http_listen,
                 "address for reads (plain and S3), /metrics and /healthz")
      ->capture_default_str();
  app.add_option("--http-threads", o.http_threads, "HTTP I/O threads")->capture_default_str();
  app.add_option(
      "--http-socket", o.http_socket,
      "also serve reads, /metrics and /healthz on this unix socket (mode 0666), for pods");
  app.add_flag("--read-anonymous", o.read_anonymous,
               "let reads without credentials from loopback use the agent's --token");
  app.add_option("--read-cache-ms", o.read_cache_ms, "reuse a (token, model) resolution this long")
      ->capture_default_str();
  app.add_option("--read-origin-wait-ms", o.read_origin_wait_ms,
                 "a read's piece that no peer offers waits this long before the origin (none if "
                 "the swarm is empty)")
      ->capture_default_str();
  app.add_option("--read-ahead-pieces", o.read_ahead_pieces,
                 "pieces past a reader's position to fetch too")
      ->capture_default_str();
  app.add_option("--read-first-byte-timeout-ms", o.read_first_byte_timeout_ms,
                 "a read whose first chunk cannot be had this long fails with 503 and Retry-After, "
                 "before any header")
      ->capture_default_str();
  app.add_option(
         "--cache-sync", o.cache_sync,
         "fsync each chunk of 1 MiB or more before it is visible; false trades durability (chunks "
         "are hashed again after a restart) for latency")
      ->capture_default_str();
  app.add_option("--control-socket", o.control_socket, "unix socket for the local CLI")
      ->capture_default_str();
  app.add_option("--control-socket-mode", o.control_socket_mode,
                 "permission bits of the control socket, octal; who may connect may pull and seed "
                 "with a token")
      ->capture_default_str();
  app.add_option("--control-socket-group", o.control_socket_group,
                 "group of the control socket (default: the agent's own)");
  app.add_option("--stall-timeout-ms", o.stall_timeout_ms,
                 "a pull or warm that gains no byte this long fails")
      ->capture_default_str();
  app.add_option("--port-file", o.port_file, "write 'peer_port http_port' here once listening");
  app.add_option("--origin", o.origin.url,
                 "file:///path or s3://bucket/prefix, for chunks no peer has")
      ->envname("SHOAL_ORIGIN");
  app.add_option("--s3-endpoint", o.origin.endpoint, "S3 endpoint URL")
      ->envname("SHOAL_S3_ENDPOINT");
  app.add_option("--s3-region", o.origin.region, "S3 signing region");
  app.add_option("--origin-fallback-ms", o.origin_fallback_ms,
                 "wait this long for a peer before the origin")
      ->capture_default_str();
  app.add_option("--origin-parallelism", o.origin_parallelism, "origin GETs in flight per pull")
      ->capture_default_str();
  app.add_option("--disk-threads", o.disk_threads, "disk I/O threads")->capture_default_str();
  app.add_option(
         "--peer-handshake-timeout-s", o.peer_handshake_timeout_s,
         "close a peer connection that has not finished its BitTorrent handshake this many seconds "
         "after connecting (after naming a torrent)")
      ->capture_default_str();
  app.add_option(
         "--peer-timeout-s", o.peer_timeout_s,
         "close a peer connection that receives nothing this many seconds (keep-alives every half)")
      ->capture_default_str();
  app.add_option("--peer-message-stall-s", o.peer_message_stall_s,
                 "close a peer connection that spends this many seconds in all mid-message while "
                 "under 1 KiB of payload moves")
      ->capture_default_str();
  app.add_option("--label", o.labels,
                 "label this agent for `shoal warm --nodes`, as key=value; repeatable");
  app.add_option("--log-level", log_level, "debug, info, warn or error")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (print_config) {
    std::fputs(shoal::EffectiveConfig(app, "", {"token"}).c_str(), stdout);
    return 0;
  }
  shoal::Status s = shoal::Run(o, cache_size, log_level);
  if (!s.ok()) {
    std::fprintf(stderr, "shoald: error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
