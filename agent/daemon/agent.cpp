#include "daemon/agent.h"

#include <kj/async-unix.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "daemon/agent_metrics.h"
#include "daemon/local_control.h"
#include "daemon/read_origin.h"
#include "proto/kj_status.h"
#include "shoal/host_port.h"
#include "shoal/log.h"
#include "shoal/server/standard_routes.h"
#include "shoal/store_options.h"
#include "shoal/tls_files.h"

namespace shoal {
namespace {

Result<std::unique_ptr<Origin>> OpenOriginIfSet(const OriginOptions& o) {
  if (o.url.empty()) return std::unique_ptr<Origin>();
  auto opened = OpenOrigin(o);
  if (!opened.ok()) return opened.status().WithContext("open origin " + o.url);
  return std::move(opened).value();
}

EngineOptions EngineOptionsOf(const AgentOptions& o) {
  EngineOptions eo;
  eo.listen = o.peer_listen;
  eo.sessions = PeerSessionsOf(o);
  eo.disk_threads = o.disk_threads;
  eo.handshake_timeout_s = o.peer_handshake_timeout_s;
  eo.peer_timeout_s = o.peer_timeout_s;
  eo.message_stall_s = o.peer_message_stall_s;
  eo.upload_rate = o.peer_upload_rate;
  // The tracker says how this cluster admits peers, at registration.
  eo.await_peer_identity = true;
  return eo;
}

ReadServiceOptions ReadOptionsOf(const AgentOptions& o) {
  ReadServiceOptions ro;
  ro.tracker = o.tracker;
  ro.agent_token = o.token;
  ro.anonymous_loopback = o.read_anonymous;
  ro.cache_ms = o.read_cache_ms;
  ro.fetch.origin_wait_ms = o.read_origin_wait_ms;
  ro.fetch.read_ahead_pieces = o.read_ahead_pieces;
  ro.first_byte_timeout_ms = o.read_first_byte_timeout_ms;
  ro.fetch.origin_parallelism = o.origin_parallelism;
  ro.max_reads_per_token = o.read_max_per_token;
  ro.s3_virtual_host_suffixes = o.s3_virtual_hosts;
  for (const std::string& m : o.hub_namespaces) {
    const size_t eq = m.find('=');  // checked by AgentOptions::Validate
    ro.hub_orgs[m.substr(0, eq)] = m.substr(eq + 1);
  }
  return ro;
}

// The HTTP server's bounds; its metrics go to the agent's registry once
// that exists.
HttpServerOptions HttpOptionsOf(const AgentOptions& o) {
  HttpServerOptions h;
  h.threads = o.http_threads;
  o.http.ApplyTo(&h);
  return h;
}

HttpServerOptions WithMetrics(HttpServerOptions options, MetricsRegistry* metrics,
                              const char* listener) {
  options.metrics = metrics;
  options.metrics_listener = listener;
  return options;
}

std::unique_ptr<HttpServer> UnixSocketServer(HttpServerOptions options, const std::string& path) {
  if (path.empty()) return nullptr;
  options.unix_socket = path;
  return std::make_unique<HttpServer>(options);
}

}  // namespace

Result<std::unique_ptr<Agent>> Agent::Open(const AgentOptions& o) {
  // Evictions reach the engine once it exists, and stop before it goes.
  auto relay = std::make_shared<EvictionRelay>();
  StoreOptions so;
  so.dir = o.cache_dir;
  so.capacity_bytes = o.cache_bytes;
  so.sync = o.cache_sync;
  so.on_evict = relay->Listener();
  auto store = ChunkStore::Open(so);
  if (!store.ok()) return store.status();
  auto origin = OpenOriginIfSet(o.origin);
  if (!origin.ok()) return origin.status();
  auto engine = TorrentEngine::Start(EngineOptionsOf(o), **store);
  if (!engine.ok()) return engine.status();
  relay->Attach(engine->get());
  HttpServerOptions ho = HttpOptionsOf(o);
  SHOAL_RETURN_IF_ERROR(SplitHostPort(o.http_listen, &ho.address, &ho.port));
  std::optional<HttpServerOptions> https;
  if (!o.https_listen.empty()) {
    https = ho;
    SHOAL_RETURN_IF_ERROR(SplitHostPort(o.https_listen, &https->address, &https->port));
    auto pem = LoadTlsServerPem(o.https_cert_file, o.https_key_file);
    if (!pem.ok()) return pem.status().WithContext("--https-cert");
    https->tls = std::move(pem).value();
  }
  std::optional<HttpServerOptions> hub;
  if (!o.hub_listen.empty()) {
    hub = HttpOptionsOf(o);
    SHOAL_RETURN_IF_ERROR(SplitHostPort(o.hub_listen, &hub->address, &hub->port));
  }
  return std::unique_ptr<Agent>(new Agent(o, std::move(relay), std::move(store).value(),
                                          std::move(origin).value(), std::move(engine).value(), ho,
                                          https, hub));
}

Agent::Agent(const AgentOptions& options, std::shared_ptr<EvictionRelay> relay,
             std::unique_ptr<ChunkStore> store, std::unique_ptr<Origin> origin,
             std::unique_ptr<TorrentEngine> engine, const HttpServerOptions& http,
             const std::optional<HttpServerOptions>& https,
             const std::optional<HttpServerOptions>& hub)
    : options_(options),
      relay_(std::move(relay)),
      store_(std::move(store)),
      origin_(std::move(origin)),
      engine_(std::move(engine)),
      fetcher_(std::make_unique<ChunkFetcher>(origin_.get(), *store_, engine_.get())),
      io_(kj::setupAsyncIo()),
      pulls_{.options = options_,
             .store = *store_,
             .engine = *engine_,
             .origin = origin_.get(),
             .fetcher = fetcher_.get(),
             .announce_url = "",
             .counters = counters_,
             .ring = nullptr,
             .self_id = "",
             .stopping = &stopping_},
      orders_(
          pulls_, [this] { return link_.announce_url(); },
          [this] { return link_.CurrentRing(std::chrono::milliseconds(2000)); },
          [this] { return link_.agent_id(); }),
      link_(io_, options_, engine_->listen_port(), TrackerOrders(), revocations_),
      metrics_(NewAgentMetrics(*store_, *engine_, counters_, origin_.get(), link_, control_jobs_)),
      http_(WithMetrics(http, metrics_.get(), "http")),
      reads_(
          ReadOptionsOf(options_), *store_, *engine_, *fetcher_,
          [this] { return link_.announce_url(); }, revocations_, *metrics_),
      http_unix_(UnixSocketServer(WithMetrics(http, metrics_.get(), "unix"), options_.http_socket)),
      https_(https ? std::make_unique<HttpServer>(WithMetrics(*https, metrics_.get(), "https"))
                   : nullptr),
      hub_(hub ? std::make_unique<HttpServer>(WithMetrics(*hub, metrics_.get(), "hub")) : nullptr) {
  auto health = [this] { return Health(); };
  AddStandardRoutes(http_, *metrics_, health);
  reads_.fetcher().set_request_origin(OwnerPacedOrigin(options_, *store_));
  reads_.AddRoutes(http_);
  for (HttpServer* extra : {http_unix_.get(), https_.get()}) {
    if (extra == nullptr) continue;
    AddStandardRoutes(*extra, *metrics_, health);
    reads_.AddRoutes(*extra);
  }
  if (hub_) reads_.AddHubRoutes(*hub_);
}

AgentStats Agent::Stats() {
  StoreStats s = store_->Stats();
  EngineStats e = engine_->Stats();
  AgentStats a;
  a.cached_bytes = s.used_bytes;
  a.cached_chunks = s.chunks;
  a.bytes_from_peers = e.bytes_down;
  a.bytes_from_origin = counters_.bytes_from_origin;
  a.origin_bytes_read = counters_.origin_bytes_read;
  a.bytes_to_peers = e.bytes_up;
  a.torrents = static_cast<uint32_t>(e.torrents);
  a.peers = static_cast<uint32_t>(e.peers);
  return a;
}

Status Agent::Health() const {
  if (!link_.registered())
    return Status::Unavailable("not registered with tracker " + options_.tracker.address);
  // A cache that cannot take a chunk cannot serve a pull or a cold read.
  const StoreSpace space = store_->Space();
  if (space.refusing && !space.room) return Status::Unavailable("cache degraded: " + space.why);
  return Status::OK();
}

ControlHandlers Agent::TrackerOrders() {
  ControlHandlers handlers;
  handlers.stats = [this] { return Stats(); };
  handlers.peer_identity = [this](const PeerIdentity& id) { return engine_->SetPeerIdentity(id); };
  handlers.fetch = [this](const std::string& ns, const std::string& name, const VersionId& version,
                          const std::vector<ChunkId>& chunks,
                          bool takeover) -> Result<FetchOrderResult> {
    auto r = orders_.Run(ns, name, version, chunks, takeover);
    if (!r.ok()) return r.status();
    return FetchOrderResult{static_cast<uint32_t>(r->chunks), r->bytes};
  };
  handlers.replicate = [this](const std::string& ns, const std::string& name,
                              const VersionId& version,
                              const std::vector<ChunkId>& chunks) -> Result<uint64_t> {
    constexpr int64_t kReplicaWaitMs = 60000;
    return orders_.Replicate(ns, name, version, chunks, kReplicaWaitMs);
  };
  handlers.prefetch = [this](const std::string& ns, const std::string& name,
                             const VersionId& version) -> Result<PrefetchResult> {
    PullContext job = pulls_;
    job.announce_url = link_.announce_url();
    job.ring = [this] { return link_.ring(); };
    job.self_id = link_.agent_id();
    PullRequest req;
    req.ref = ns + "/" + name + ":" + version.ToHex();
    req.token = pulls_.options.token;
    auto r = RunPull(job, req, nullptr);
    if (!r.ok()) return r.status();
    return PrefetchResult{r->total_bytes, r->bytes_from_peers, r->bytes_from_origin};
  };
  handlers.registered_again = [this] { engine_->ReannounceAll(); };
  return handlers;
}

Status Agent::Run() {
  SHOAL_RETURN_IF_ERROR(http_.Start().WithContext("listen on " + options_.http_listen));
  if (http_unix_) {
    SHOAL_RETURN_IF_ERROR(http_unix_->Start().WithContext("listen on " + options_.http_socket));
  }
  if (https_) {
    SHOAL_RETURN_IF_ERROR(https_->Start().WithContext("listen on " + options_.https_listen));
  }
  if (hub_) SHOAL_RETURN_IF_ERROR(hub_->Start().WithContext("listen on " + options_.hub_listen));
  SHOAL_RETURN_IF_ERROR(link_.StartRelay());
  kj::Promise<void> control = nullptr;
  SHOAL_RETURN_IF_ERROR(ServeControl(&control));
  WritePortFile();
  LogStart();
  auto tracker = link_.Run().eagerlyEvaluate([](kj::Exception&& e) {
    Log(LogLevel::kError, "tracker.link_failed",
        {{"error", std::string(e.getDescription().cStr())}});
  });
  WaitForStop(kj::mv(control));
  Stop();
  return Status::OK();
}

Status Agent::ServeControl(kj::Promise<void>* served) {
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 *served = ServeLocalControl(io_, options_.control_socket,
                                             LocalControlDeps{.pulls = pulls_,
                                                              .link = link_,
                                                              .stats = [this] { return Stats(); },
                                                              .threads = control_jobs_,
                                                              .reads = reads_,
                                                              .revocations = revocations_});
               })) {
    return StatusFromException(*e, "control socket")
        .WithContext("listen on " + options_.control_socket);
  }
  return Status::OK();
}

void Agent::WritePortFile() {
  if (options_.port_file.empty()) return;
  std::string tmp = options_.port_file + ".tmp";
  std::ofstream(tmp) << engine_->listen_port() << " " << http_.port() << " "
                     << (https_ ? https_->port() : 0) << " " << (hub_ ? hub_->port() : 0) << "\n";
  std::filesystem::rename(tmp, options_.port_file);
}

void Agent::LogStart() {
  Log(LogLevel::kInfo, "agent.start",
      {{"peer_port", static_cast<int64_t>(engine_->listen_port())},
       {"peer_sessions", static_cast<int64_t>(engine_->sessions())},
       {"http_port", static_cast<int64_t>(http_.port())},
       {"http_socket", options_.http_socket},
       {"https_port", static_cast<int64_t>(https_ ? https_->port() : 0)},
       {"hub_port", static_cast<int64_t>(hub_ ? hub_->port() : 0)},
       {"cache_dir", options_.cache_dir},
       {"cache_bytes", options_.cache_bytes},
       {"control", options_.control_socket},
       {"origin", origin_ ? origin_->Describe() : std::string("(none)")}});
}

void Agent::WaitForStop(kj::Promise<void> control) {
  auto served = control.then([] { return 0; });
  auto signal = io_.unixEventPort.onSignal(SIGTERM)
                    .exclusiveJoin(io_.unixEventPort.onSignal(SIGINT))
                    .then([](siginfo_t) { return 0; });
  served.exclusiveJoin(kj::mv(signal)).wait(io_.waitScope);
}

void Agent::Stop() {
  Log(LogLevel::kInfo, "agent.stop", {{"jobs", static_cast<int64_t>(control_jobs_.Running())}});
  // Every job polls `stopping_`; the event loop keeps turning meanwhile, so
  // a job waiting on its caller through the loop is answered, not stuck.
  stopping_ = true;
  auto& timer = io_.provider->getTimer();
  for (int i = 0; i < 500 && control_jobs_.Running() > 0; ++i)
    timer.afterDelay(10 * kj::MILLISECONDS).wait(io_.waitScope);
  link_.StopRelay();
  reads_.Stop();  // its waiting reads hold HTTP connections
  http_.Stop();
  if (http_unix_) http_unix_->Stop();
  if (https_) https_->Stop();
  if (hub_) hub_->Stop();
  relay_->Detach();
  engine_->Stop();
  ::unlink(options_.control_socket.c_str());
}

}  // namespace shoal
