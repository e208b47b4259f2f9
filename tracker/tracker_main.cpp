// shoal-tracker: the manifest registry, tokens and (later) the swarm tracker.
//
//   shoal-tracker serve --data-dir DIR --origin file:///srv/origin
//   shoal-tracker token create --data-dir DIR --ns team-a --role read --ttl 30d
#include <CLI/CLI.hpp>
#include <kj/async-io.h>
#include <kj/async-unix.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "http_api.h"
#include "kj_status.h"
#include "registry_store.h"
#include "rpc_listener.h"
#include "shoal/duration.h"
#include "shoal/host_port.h"
#include "shoal/log.h"
#include "shoal/manifest_signer.h"
#include "shoal/origin.h"
#include "shoal/service/effective_config.h"
#include "shoal/token.h"
#include "tracker_context.h"
#include "tracker_options.h"

namespace shoal::tracker {
namespace {

struct ServeFlags {
  TrackerOptions opts;
  std::string gc_grace = "24h";
  std::string upload_lease = "10m";
  std::string log_level = "info";
  std::string announce_interval = "5s";
  std::string seed_announce_interval = "60s";
  std::string fetch_done_grace = "15s";
  std::string rpc_auth_timeout = "10s";
  std::string rpc_message_timeout = "30s";
  bool print_config = false;
};

void AddServeFlags(CLI::App* cmd, ServeFlags* f) {
  TrackerOptions& o = f->opts;
  cmd->add_option("--data-dir", o.data_dir, "registry, token secret and signing key")->capture_default_str();
  cmd->add_option("--rpc-listen", o.rpc_listen, "Cap'n Proto RPC address")->capture_default_str();
  cmd->add_option("--http-listen", o.http_listen, "HTTP address for /healthz, /metrics, /v1")->capture_default_str();
  cmd->add_option("--port-file", o.port_file, "write 'rpc_port http_port' here once listening");
  cmd->add_option("--origin", o.origin.url, "file:///path or s3://bucket/prefix")->required();
  cmd->add_option("--s3-endpoint", o.origin.endpoint, "S3 endpoint URL; empty = AWS");
  cmd->add_option("--s3-region", o.origin.region, "S3 signing region");
  cmd->add_option("--s3-access-key", o.origin.access_key, "S3 access key; default from AWS_ACCESS_KEY_ID");
  cmd->add_option("--s3-secret-key", o.origin.secret_key, "S3 secret key; default from AWS_SECRET_ACCESS_KEY");
  cmd->add_option("--s3-ca-file", o.origin.ca_file, "PEM bundle to trust for https");
  cmd->add_option("--upload-lease", f->upload_lease, "how long a publish holds a chunk upload")->capture_default_str();
  cmd->add_option("--gc-grace", f->gc_grace, "unreferenced chunks younger than this are kept")->capture_default_str();
  cmd->add_option("--keep-versions", o.keep_versions, "keep this many versions per model (tagged ones always); 0 = all")->capture_default_str();
  cmd->add_option("--origin-parallelism", o.origin_parallelism, "concurrent origin checks")->capture_default_str();
  cmd->add_option("--announce-interval", f->announce_interval, "how often agents re-announce")->capture_default_str();
  cmd->add_option("--seed-announce-interval", f->seed_announce_interval,
                  "how often an agent holding a whole file re-announces it")
      ->capture_default_str();
  cmd->add_option("--origin-budget", o.origin_budget, "origin fetch orders in flight across the cluster")
      ->capture_default_str();
  cmd->add_option("--fetches-per-agent", o.fetches_per_agent, "of those, at most this many on one agent")
      ->capture_default_str();
  cmd->add_option("--replicas", o.replicas,
                  "owners per chunk: the first fetches it from the origin, the rest copy it from the swarm")
      ->capture_default_str();
  cmd->add_option("--fetch-done-grace", f->fetch_done_grace,
                  "a chunk delivered this recently is not fetched again when asked for")
      ->capture_default_str();
  cmd->add_option("--rpc-auth-timeout", f->rpc_auth_timeout,
                  "an RPC connection that has not authenticated by then is closed")
      ->capture_default_str();
  cmd->add_option("--rpc-message-timeout", f->rpc_message_timeout,
                  "an RPC message must arrive whole within this of its first byte")
      ->capture_default_str();
  cmd->add_option("--rpc-max-unauthenticated", o.rpc_max_unauthenticated,
                  "RPC connections allowed at once before they authenticate; more are closed")
      ->capture_default_str();
  cmd->add_option("--max-swarms", o.max_swarms, "torrents with live peers at once; announces starting more are refused")
      ->capture_default_str();
  cmd->add_option("--max-swarm-peers", o.max_swarm_peers,
                  "live peers over all swarms; announces from new peers beyond it are refused")
      ->capture_default_str();
  cmd->add_option("--log-level", f->log_level, "debug, info, warn or error")->capture_default_str();
  cmd->add_flag("--print-config", f->print_config,
                "print the effective configuration as a config file and exit")
      ->configurable(false);
}

// Drops expired peers and empty swarms every announce interval, so a
// torrent announced once does not stay in memory.
kj::Promise<void> SweepSwarms(kj::Timer& timer, TrackerContext& ctx) {
  return timer.afterDelay(ctx.options.announce_interval_ms * kj::MILLISECONDS).then([&timer, &ctx] {
    ctx.swarm.Sweep(NowMs());
    return SweepSwarms(timer, ctx);
  });
}

Status Serve(ServeFlags& f) {
  // Before any thread starts (LevelDB's, the origin client's): threads
  // inherit this thread's signal mask, and one without it would let SIGTERM
  // kill the tracker instead of stopping it.
  kj::UnixEventPort::captureSignal(SIGTERM);
  kj::UnixEventPort::captureSignal(SIGINT);
  TrackerOptions& o = f.opts;
  Result<LogLevel> level = ParseLogLevel(f.log_level);
  if (!level.ok()) return level.status();
  SetLogLevel(*level);
  auto grace = ParseDuration(f.gc_grace, /*allow_zero=*/true);
  if (!grace.ok()) return grace.status().WithContext("--gc-grace");
  o.gc_grace_ms = grace->count();
  auto lease = ParseDuration(f.upload_lease);
  if (!lease.ok()) return lease.status().WithContext("--upload-lease");
  o.upload_lease_ms = lease->count();
  auto interval = ParseDuration(f.announce_interval);
  if (!interval.ok()) return interval.status().WithContext("--announce-interval");
  o.announce_interval_ms = interval->count();
  auto seed_interval = ParseDuration(f.seed_announce_interval);
  if (!seed_interval.ok()) return seed_interval.status().WithContext("--seed-announce-interval");
  o.seed_announce_interval_ms = seed_interval->count();
  auto done_grace = ParseDuration(f.fetch_done_grace, /*allow_zero=*/true);
  if (!done_grace.ok()) return done_grace.status().WithContext("--fetch-done-grace");
  o.fetch_done_grace_ms = done_grace->count();
  auto auth_timeout = ParseDuration(f.rpc_auth_timeout);
  if (!auth_timeout.ok()) return auth_timeout.status().WithContext("--rpc-auth-timeout");
  o.rpc_auth_timeout_ms = auth_timeout->count();
  auto message_timeout = ParseDuration(f.rpc_message_timeout);
  if (!message_timeout.ok()) return message_timeout.status().WithContext("--rpc-message-timeout");
  o.rpc_message_timeout_ms = message_timeout->count();
  SHOAL_RETURN_IF_ERROR(o.Validate());

  std::error_code ec;
  std::filesystem::create_directories(o.data_dir, ec);
  if (ec) return Status::IOError("create --data-dir " + o.data_dir + ": " + ec.message());
  auto store = RegistryStore::Open(o.data_dir + "/registry");
  if (!store.ok()) return store.status();
  auto tokens = TokenAuthority::LoadOrCreate(o.data_dir + "/token.secret");
  if (!tokens.ok()) return tokens.status();
  auto signer = ManifestSigner::LoadOrCreate(o.data_dir + "/signing.key");
  if (!signer.ok()) return signer.status();
  auto origin = OpenOrigin(o.origin);
  if (!origin.ok()) return origin.status().WithContext("open origin " + o.origin.url);

  auto io = kj::setupAsyncIo();
  TrackerContext ctx(o, **store, *tokens, **signer, **origin);
  SHOAL_RETURN_IF_ERROR((*store)->ForEachManifest([&ctx](const Manifest& m) { ctx.torrents.Add(m); })
                            .WithContext("indexing published torrents"));

  uint16_t rpc_port = 0;
  kj::Promise<void> rpc = nullptr;
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&] { rpc = ServeRpc(io, ctx, o.rpc_listen, &rpc_port); })) {
    return StatusFromException(*e, "rpc listener").WithContext("listen on " + o.rpc_listen);
  }
  MetricsRegistry metrics;
  HttpServerOptions http_opts;
  SHOAL_RETURN_IF_ERROR(SplitHostPort(o.http_listen, &http_opts.address, &http_opts.port));
  HttpServer http(http_opts);
  AddTrackerRoutes(http, metrics, ctx);
  SHOAL_RETURN_IF_ERROR(http.Start().WithContext("listen on " + o.http_listen));
  uint16_t http_port = http.port();
  ctx.http_port = http_port;
  if (!o.port_file.empty()) {
    std::string tmp = o.port_file + ".tmp";
    std::ofstream(tmp) << rpc_port << " " << http_port << "\n";
    std::filesystem::rename(tmp, o.port_file, ec);
  }
  Log(LogLevel::kInfo, "tracker.start",
      {{"rpc_port", static_cast<int64_t>(rpc_port)}, {"http_port", static_cast<int64_t>(http_port)},
       {"data_dir", o.data_dir},
       {"origin", (*origin)->Describe()}, {"signing_key", (*signer)->key_id()},
       {"versions", static_cast<int64_t>((*store)->version_count())},
       {"torrents", static_cast<int64_t>(ctx.torrents.size())}});

  auto swarm_sweeps = SweepSwarms(io.provider->getTimer(), ctx).eagerlyEvaluate([](kj::Exception&& e) {
    Log(LogLevel::kError, "swarm.sweep_failed", {{"error", std::string(e.getDescription().cStr())}});
  });
  auto fetch_ticks = ctx.fetches.Run(io.provider->getTimer(), 250 * kj::MILLISECONDS)
                         .eagerlyEvaluate([](kj::Exception&& e) {
                           Log(LogLevel::kError, "fetch.scheduler_failed", {{"error", std::string(e.getDescription().cStr())}});
                         });
  auto rpc_failed = rpc.then([]() -> int { return 0; });
  auto signal = io.unixEventPort.onSignal(SIGTERM)
                    .exclusiveJoin(io.unixEventPort.onSignal(SIGINT))
                    .then([](siginfo_t) { return 0; });
  rpc_failed.exclusiveJoin(kj::mv(signal)).wait(io.waitScope);
  http.Stop();
  Log(LogLevel::kInfo, "tracker.stop", {});
  return Status::OK();
}

struct TokenFlags {
  std::string data_dir = "/var/lib/shoal-tracker";
  std::vector<std::string> namespaces;
  std::string role = "read";
  std::string ttl = "30d";
  std::string subject;
};

Status CreateToken(const TokenFlags& f) {
  auto role = ParseRole(f.role);
  if (!role.ok()) return role.status();
  auto ttl = ParseDuration(f.ttl);
  if (!ttl.ok()) return ttl.status().WithContext("--ttl");
  std::error_code ec;
  std::filesystem::create_directories(f.data_dir, ec);
  auto tokens = TokenAuthority::LoadOrCreate(f.data_dir + "/token.secret");
  if (!tokens.ok()) return tokens.status();
  TokenClaims c;
  c.id = NewTokenId();
  c.subject = f.subject;
  c.role = *role;
  c.namespaces = f.namespaces;
  c.issued_at_ms = NowMs();
  c.expires_at_ms = c.issued_at_ms + ttl->count();
  SHOAL_RETURN_IF_ERROR(c.Validate());
  std::printf("%s\n", tokens->Mint(c).c_str());
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

  TokenFlags token;
  CLI::App* token_cmd = app.add_subcommand("token", "manage access tokens");
  token_cmd->require_subcommand(1);
  CLI::App* create = token_cmd->add_subcommand("create", "mint a token and print it");
  create->add_option("--data-dir", token.data_dir, "the tracker's data folder (holds the secret)")->capture_default_str();
  create->add_option("--ns", token.namespaces, "namespace the token may use; repeat, or '*' for all")->required();
  create->add_option("--role", token.role, "read, write or admin")->capture_default_str();
  create->add_option("--ttl", token.ttl, "lifetime: 30d, 12h, 15m, 3600s")->capture_default_str();
  create->add_option("--subject", token.subject, "who holds the token, for the audit log")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (serve_cmd->parsed() && serve.print_config) {
    std::fputs(shoal::EffectiveConfig(*serve_cmd, "serve", {"s3-secret-key"}).c_str(), stdout);
    return 0;
  }
  shoal::Status s = serve_cmd->parsed() ? Serve(serve) : CreateToken(token);
  if (!s.ok()) {
    std::fprintf(stderr, "shoal-tracker: error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
