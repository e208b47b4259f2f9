// shoal-tracker: the manifest registry, tokens and (later) the swarm tracker.
//
//   shoal-tracker serve --data-dir DIR --origin file:///srv/origin
//   shoal-tracker token create --data-dir DIR --ns team-a --role read --ttl 30d
//   shoal-tracker token list|revoke ...   (token_commands.h)
#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "admin/keys_command.h"
#include "admin/recover_command.h"
#include "admin/token_commands.h"
#include "agents/fleet_members.h"
#include "common/tracker_options.h"
#include "federation/namespace_mirror.h"
#include "http/http_api.h"
#include "http/tracker_collectors.h"
#include "kv/etcd_kv.h"
#include "proto/kj_status.h"
#include "proto/rpc_tls.h"
#include "registry/issued_tokens.h"
#include "registry/manifest_archive.h"
#include "registry/registry_store.h"
#include "rpc/gateway_service.h"
#include "rpc/rpc_listener.h"
#include "serve/serve_flags.h"
#include "serve/tracker_context.h"
#include "serve/tracker_wiring.h"
#include "shoal/duration.h"
#include "shoal/host_port.h"
#include "shoal/log.h"
#include "shoal/manifest_signer.h"
#include "shoal/origin.h"
#include "shoal/peer_cert.h"
#include "shoal/server/effective_config.h"
#include "shoal/tls_files.h"
#include "shoal/token.h"
#include "storage/registry_open.h"

namespace shoal::tracker {
namespace {

// Drops expired peers and empty swarms every `interval_ms`, so a torrent
// announced once does not stay in memory, and the swarm entries of agents
// that missed their heartbeats while their connection stayed open: those
// the directory dropped since `seen_epoch`, or every session's agent when
// its log no longer reaches back that far.
kj::Promise<void> SweepSwarms(kj::Timer& timer, SwarmStore& swarm, AgentDirectory& agents,
                              int64_t interval_ms, uint64_t seen_epoch = 0) {
  return timer.afterDelay(interval_ms * kj::MILLISECONDS)
      .then([&timer, &swarm, &agents, interval_ms, seen_epoch] {
        const int64_t now = NowMs();
        swarm.Sweep(now);
        auto live = [&](const std::string& agent) { return agents.Contains(agent, now); };
        RingChangeList log;
        uint64_t epoch = agents.epoch();
        if (agents.RingChanges(seen_epoch, now, log)) {
          std::vector<std::string> gone;
          for (const RingChange& c : log.changes) {
            if (c.left) gone.push_back(c.id);
          }
          swarm.ReleaseAgents(gone, live);
          epoch = log.epoch;
        } else {
          swarm.ReleaseUnless(live);
        }
        return SweepSwarms(timer, swarm, agents, interval_ms, epoch);
      });
}

// What the data folder and the origin hold, opened before the services.
struct TrackerState {
  std::unique_ptr<Origin> origin;
  std::unique_ptr<ManifestArchive> archive;  // copies of the manifests, in the origin
  std::unique_ptr<RegistryStore> store;
  std::unique_ptr<TokenAuthority> tokens;
  std::unique_ptr<ManifestSigner> signer;
  std::unique_ptr<PeerCa> peer_ca;  // null with --peer-security off
  std::optional<TlsServerPem> tls;  // the control ports' identity; none: plain
};

// The trackers sharing this one's registry: with etcd, a lease-held key
// under <prefix>fleet/ naming this tracker's RPC address; alone otherwise.
Result<std::unique_ptr<FleetMembers>> JoinFleet(const TrackerOptions& o, uint16_t rpc_port) {
  auto where = RegistryLocation::Parse(o.registry);
  if (!where.ok()) return where.status();
  if (!where->etcd) return std::make_unique<FleetMembers>();
  where->etcd_options.ca_file = o.registry_ca_file;
  // Short calls: a refresh must end well within the lease's TTL.
  where->etcd_options.timeout_ms = 2000;
  where->etcd_options.request_timeout_ms = 1500;
  auto etcd = EtcdClient::Open(where->etcd_options);
  if (!etcd.ok()) return etcd.status();
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(o.rpc_listen, &host, &port).ok() || host.empty()) host = "127.0.0.1";
  return FleetMembers::Join(std::move(etcd).value(), where->key_prefix,
                            host + ":" + std::to_string(rpc_port));
}

Status OpenState(const TrackerOptions& o, TrackerState* state) {
  std::error_code ec;
  std::filesystem::create_directories(o.data_dir, ec);
  if (ec) return Status::IOError("create --data-dir " + o.data_dir + ": " + ec.message());
  auto origin = OpenOrigin(o.origin);
  if (!origin.ok()) return origin.status().WithContext("open origin " + o.origin.url);
  state->origin = std::move(origin).value();
  state->archive = std::make_unique<ManifestArchive>(*state->origin);
  auto kv = OpenRegistryKv(o);
  if (!kv.ok()) return kv.status();
  state->store = std::make_unique<RegistryStore>(std::move(kv).value(), state->archive.get());
  const std::string& secrets = o.secrets_dir.empty() ? o.data_dir : o.secrets_dir;
  // The fleet's first tracker creates the secrets; the rest load them.
  std::filesystem::create_directories(secrets, ec);
  if (ec) return Status::IOError("create --secrets-dir " + secrets + ": " + ec.message());
  auto tokens = TokenAuthority::LoadOrCreate(secrets + "/token.secret");
  if (!tokens.ok()) return tokens.status();
  auto signer = ManifestSigner::LoadOrCreate(secrets + "/signing.key");
  if (!signer.ok()) return signer.status();
  if (o.peer_security != PeerSecurity::kOff) {
    auto ca = PeerCa::LoadOrCreate(secrets);
    if (!ca.ok()) return ca.status().WithContext("peer CA");
    state->peer_ca = std::move(ca).value();
  }
  if (!o.tls_cert_file.empty()) {
    auto pem = LoadTlsServerPem(o.tls_cert_file, o.tls_key_file);
    if (!pem.ok()) return pem.status();
    // Each RPC loop makes its own from the PEM; this one only checks it.
    auto rpc_tls = RpcTlsServer::Create(*pem);
    if (!rpc_tls.ok()) return rpc_tls.status().WithContext("--tls-cert");
    state->tls = std::move(pem).value();
  }
  state->tokens = std::make_unique<TokenAuthority>(std::move(tokens).value());
  state->signer = std::move(signer).value();
  return Status::OK();
}

// What the RPC server serves, from the tracker's options.
RpcServeOptions RpcServeOptionsOf(TrackerContext& ctx, const GatewayDeps& gateway,
                                  const TrackerState& state, Histogram& loop_lag) {
  const TrackerOptions& o = ctx.options;
  RpcServeOptions r;
  // By default one core is left to the main loop, HTTP and the rest.
  r.threads = o.rpc_threads > 0
                  ? o.rpc_threads
                  : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 5u)) - 1;
  r.limits.auth_timeout_ms = o.rpc_auth_timeout_ms;
  r.limits.message_timeout_ms = o.rpc_message_timeout_ms;
  r.limits.max_unauthenticated = o.rpc_max_unauthenticated;
  r.limits.max_connections = o.rpc_max_connections;
  r.limits.max_per_client = o.rpc_max_connections_per_client;
  r.limits.max_unauthenticated_per_client = o.rpc_max_unauthenticated_per_client;
  r.metrics = &ctx.metrics;
  r.gateway = &gateway;
  r.tls = state.tls.has_value() ? &*state.tls : nullptr;
  r.loop_lag = &loop_lag;
  return r;
}

// The HTTP server's bounds, counting into `metrics`.
HttpServerOptions HttpOptionsOf(const TrackerOptions& o, MetricsRegistry* metrics) {
  HttpServerOptions h;
  o.http.ApplyTo(&h);
  h.metrics = metrics;
  return h;
}

// Takes every descriptor the service manager allows: each HTTP and RPC
// connection holds one, and the connection limits assume they fit.
void RaiseDescriptorLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
}

// Writes "rpc_port http_port" to `path` (if set) in one rename, so a reader
// never sees half of it.
void WritePortFile(const std::string& path, uint16_t rpc_port, uint16_t http_port) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << rpc_port << " " << http_port << "\n";
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
}

// Reads what other trackers committed, deleted or revoked, every
// registry_poll_ms, on the blocking pool (the registry may be remote). A
// write another tracker made to the audit log wakes this tracker's watches.
kj::Promise<void> FollowRegistry(kj::Timer& timer, TrackerContext& ctx, uint64_t audit_end = 0) {
  return timer.afterDelay(ctx.options.registry_poll_ms * kj::MILLISECONDS)
      .then([&timer, &ctx, audit_end] {
        RegistryFollower& follower = ctx.follower;
        RegistryStore& store = ctx.store;
        ChangeSignal& changes = ctx.changes;
        return ctx.pool
            .Run<Result<uint64_t>>([&follower, &store, &changes, audit_end]() -> Result<uint64_t> {
              SHOAL_RETURN_IF_ERROR(follower.CatchUp().status());
              Result<uint64_t> end = store.AuditEnd();
              if (end.ok() && *end != audit_end) changes.Bump();
              return end;
            })
            .then([&timer, &ctx, audit_end](Result<uint64_t> end) {
              if (!end.ok()) {
                Log(LogLevel::kWarn, "registry.follow_failed", {{"error", end.status().message()}});
              }
              return FollowRegistry(timer, ctx, end.ok() ? *end : audit_end);
            });
      });
}

// A mirrored version's chunks, queued for their owners at warm priority
// (--follow-warm), from the mirror's thread: the scheduler's loop takes the
// order; nobody waits for the chunks.
void WarmOwners(TrackerContext& ctx, const std::string& ns, const std::string& name,
                const VersionId& id, const std::vector<ChunkId>& chunks) {
  ctx.scheduler_loop.executeSync([&] {
    if (ctx.fetches.Ring()->size() == 0) return;  // no agents yet: the first pull fetches
    auto watch = std::make_shared<WarmWatch>();
    watch->finished = kj::newPromiseAndFulfiller<void>().fulfiller;
    ctx.metrics.warms++;
    ctx.fetches.Warm(FetchTarget{ns, name, id}, chunks, watch);
    Log(LogLevel::kInfo, "mirror.warm",
        {{"version", ns + "/" + name + ":" + id.ToHex()},
         {"chunks", static_cast<int64_t>(chunks.size())}});
  });
}

// A mirror of another cluster's namespaces (--follow), and the upstream's
// origin it reads; both empty without --follow.
struct Mirror {
  std::unique_ptr<Origin> upstream_origin;
  std::unique_ptr<NamespaceMirror> mirror;
};

Status StartMirror(TrackerContext& ctx, Mirror* out) {
  const FollowOptions& follow = ctx.options.follow;
  if (!follow.enabled()) return Status::OK();
  auto opened = OpenOrigin(follow.origin);
  if (!opened.ok()) return opened.status().WithContext("--follow-origin");
  out->upstream_origin = std::move(opened).value();
  out->mirror = std::make_unique<NamespaceMirror>(MirrorDeps{
      follow, ctx.store, ctx.origin, *out->upstream_origin, ctx.signer, ctx.torrents, ctx.metrics,
      [&ctx](const std::string& ns, const std::string& name, const VersionId& id,
             const std::vector<ChunkId>& chunks) { WarmOwners(ctx, ns, name, id, chunks); }});
  out->mirror->Start();
  return Status::OK();
}

// Stops the mirror's thread. The loop keeps turning meanwhile: a warm the
// mirror started waits on it.
void StopMirror(kj::AsyncIoContext& io, Mirror* m) {
  if (!m->mirror) return;
  m->mirror->RequestStop();
  while (!m->mirror->finished()) {
    io.provider->getTimer().afterDelay(20 * kj::MILLISECONDS).wait(io.waitScope);
  }
  m->mirror->Stop();
}

// Every 500 ms, gives the fetch scheduler this tracker's share of the
// origin budget for the fleet's current size.
kj::Promise<void> ShareOriginBudget(kj::Timer& timer, TrackerContext& ctx,
                                    const FleetMembers& fleet) {
  const uint32_t trackers = fleet.size();
  const uint32_t share = OriginBudgetShare(ctx.options.origin_budget, trackers);
  ctx.fetches.SetOriginBudget(share);
  ctx.metrics.fleet_trackers = trackers;
  ctx.metrics.origin_budget_share = share;
  return timer.afterDelay(500 * kj::MILLISECONDS).then([&timer, &ctx, &fleet] {
    return ShareOriginBudget(timer, ctx, fleet);
  });
}

// Runs the periodic work until SIGTERM or SIGINT arrives.
void RunUntilStopped(kj::AsyncIoContext& io, TrackerContext& ctx, const FleetMembers& fleet,
                     Histogram& loop_lag) {
  auto swarm_sweeps =
      SweepSwarms(io.provider->getTimer(), ctx.swarm, ctx.agents,
                  std::min(ctx.options.announce_interval_ms, ctx.options.heartbeat_ms))
          .eagerlyEvaluate([](kj::Exception&& e) {
            Log(LogLevel::kError, "swarm.sweep_failed",
                {{"error", std::string(e.getDescription().cStr())}});
          });
  auto fetch_ticks = ctx.fetches.Run(io.provider->getTimer(), 250 * kj::MILLISECONDS)
                         .eagerlyEvaluate([](kj::Exception&& e) {
                           Log(LogLevel::kError, "fetch.scheduler_failed",
                               {{"error", std::string(e.getDescription().cStr())}});
                         });
  auto follows =
      FollowRegistry(io.provider->getTimer(), ctx).eagerlyEvaluate([](kj::Exception&& e) {
        Log(LogLevel::kError, "registry.follow_failed",
            {{"error", std::string(e.getDescription().cStr())}});
      });
  auto budget_shares =
      ShareOriginBudget(io.provider->getTimer(), ctx, fleet).eagerlyEvaluate([](kj::Exception&& e) {
        Log(LogLevel::kError, "fleet.budget_failed",
            {{"error", std::string(e.getDescription().cStr())}});
      });
  auto lag_samples = SampleLoopLag(io.provider->getTimer(), loop_lag).eagerlyEvaluate(nullptr);
  io.unixEventPort.onSignal(SIGTERM)
      .exclusiveJoin(io.unixEventPort.onSignal(SIGINT))
      .wait(io.waitScope);
}

Status Serve(ServeFlags& f) {
  // Before any thread starts (LevelDB's, the origin client's): threads
  // inherit this thread's signal mask, and one without it would let SIGTERM
  // kill the tracker instead of stopping it.
  kj::UnixEventPort::captureSignal(SIGTERM);
  kj::UnixEventPort::captureSignal(SIGINT);
  SHOAL_RETURN_IF_ERROR(ApplyServeFlags(f));
  RaiseDescriptorLimit();
  const TrackerOptions& o = f.opts;
  TrackerState state;
  SHOAL_RETURN_IF_ERROR(OpenState(o, &state));

  auto io = kj::setupAsyncIo();
  TrackerContext ctx(o, *state.store, *state.tokens, *state.signer, state.peer_ca.get(),
                     *state.origin);
  SHOAL_RETURN_IF_ERROR(ctx.tokens.Load());
  SHOAL_RETURN_IF_ERROR(ctx.follower.Start());
  auto rpc = RpcServer::Listen(o.rpc_listen);
  if (!rpc.ok()) return rpc.status();
  const uint16_t rpc_port = (*rpc)->port();
  auto fleet = JoinFleet(o, rpc_port);
  if (!fleet.ok()) return fleet.status();
  MetricsRegistry metrics;
  HttpServerOptions http_opts = HttpOptionsOf(o, &metrics);
  SHOAL_RETURN_IF_ERROR(SplitHostPort(o.http_listen, &http_opts.address, &http_opts.port));
  http_opts.tls = state.tls;
  HttpServer http(http_opts);
  AddTrackerCollectors(metrics, CollectorSourcesOf(ctx));
  AddTrackerRoutes(http, metrics, HttpApiDepsOf(ctx));
  SHOAL_RETURN_IF_ERROR(http.Start().WithContext("listen on " + o.http_listen));
  uint16_t http_port = http.port();
  ctx.http_port = http_port;
  Histogram& loop_lag = metrics.histogram(
      "shoal_tracker_event_loop_lag_seconds",
      "How late an event loop (the scheduler's or an RPC one) ran a timer that was due, sampled "
      "every 10 ms",
      // Doubling from 0.25 ms, with 3, 5 and 6 ms between: the tail a
      // request sees is judged against 5 ms.
      {0.00025, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.016, 0.032, 0.064, 0.128,
       0.256, 0.512, 1.024});
  // The connections' Gateway parts; they outlive the RPC server, stopped below.
  const GatewayDeps gateway = GatewayDepsOf(ctx);
  (*rpc)->Start(RpcServeOptionsOf(ctx, gateway, state, loop_lag));
  Mirror mirror;
  SHOAL_RETURN_IF_ERROR(StartMirror(ctx, &mirror));
  WritePortFile(o.port_file, rpc_port, http_port);
  Result<uint64_t> versions = state.store->VersionCount();
  Log(LogLevel::kInfo, "tracker.start",
      {{"rpc_port", static_cast<int64_t>(rpc_port)},
       {"http_port", static_cast<int64_t>(http_port)},
       {"data_dir", o.data_dir},
       {"origin", state.origin->Describe()},
       {"signing_key", state.signer->key_id()},
       {"peer_security", PeerSecurityName(o.peer_security)},
       {"control_tls", state.tls.has_value()},
       {"versions", versions.ok() ? static_cast<int64_t>(*versions) : -1},
       {"torrents", static_cast<int64_t>(ctx.torrents.size())},
       {"fleet_trackers", static_cast<int64_t>((*fleet)->size())},
       {"follow", o.follow.upstream}});
  RunUntilStopped(io, ctx, **fleet, loop_lag);
  StopMirror(io, &mirror);
  (*rpc)->Stop(io.waitScope);
  http.Stop();
  Log(LogLevel::kInfo, "tracker.stop", {});
  return Status::OK();
}

}  // namespace
}  // namespace shoal::tracker

int main(int argc, char** argv) {
  using namespace shoal::tracker;
  CLI::App app{"shoal-tracker: the Shoal manifest registry and tracker"};
  app.set_config("--config", "",
                 "read options from this TOML/INI file; serve's keys go under [serve]");
  app.require_subcommand(1);
  // Set before the subcommands, which inherit them: --config may follow
  // `serve`, and a misspelt key in the file is an error.
  app.fallthrough();
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "shoal-tracker: error: " + std::string(e.what()) + "\n";
  });

  ServeFlags serve;
  CLI::App* serve_cmd = app.add_subcommand("serve", "run the tracker");
  AddServeFlags(serve_cmd, &serve);

  RecoverFlags recover;
  CLI::App* recover_cmd =
      app.add_subcommand("recover", "put back every version whose manifest copy is in the origin");
  AddRecoverFlags(recover_cmd, &recover);

  KeysFlags keys;
  CLI::App* keys_cmd = app.add_subcommand("keys", "make a tracker's (or a fleet's) secrets");
  keys_cmd->require_subcommand(1);
  AddKeysCommands(keys_cmd, &keys);

  TokenFlags token;
  CLI::App* token_cmd = app.add_subcommand("token", "manage access tokens");
  token_cmd->require_subcommand(1);
  AddTokenCommands(token_cmd, &token);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (serve_cmd->parsed() && serve.print_config) {
    std::fputs(
        shoal::EffectiveConfig(*serve_cmd, "serve", {"s3-secret-key", "follow-s3-secret-key"})
            .c_str(),
        stdout);
    return 0;
  }
  shoal::Status s = serve_cmd->parsed()     ? Serve(serve)
                    : recover_cmd->parsed() ? RunRecover(recover)
                    : keys_cmd->parsed()    ? RunKeysCreate(keys)
                                            : RunTokenCommand(*token_cmd, token);
  if (!s.ok()) {
    std::fprintf(stderr, "shoal-tracker: error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
