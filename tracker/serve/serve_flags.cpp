#include "serve/serve_flags.h"

#include <CLI/CLI.hpp>

#include "common/store_flags.h"
#include "shoal/duration.h"
#include "shoal/log.h"

namespace shoal::tracker {
namespace {

// Bounds on the HTTP port's connections and requests.
void AddHttpLimitFlags(CLI::App* cmd, ServeFlags* f) {
  TrackerOptions& o = f->opts;
  cmd->add_option("--http-max-connections", o.http.max_connections,
                  "HTTP connections open at once; more are answered 503 and closed")
      ->capture_default_str();
  cmd->add_option("--http-max-connections-per-client", o.http.max_connections_per_client,
                  "HTTP connections open at once from one IP address; more are answered 503")
      ->capture_default_str();
  cmd->add_option("--http-max-header-bytes", o.http.max_header_bytes,
                  "request line and headers, in bytes; more are answered 431")
      ->capture_default_str();
  cmd->add_option("--http-max-request-line-bytes", o.http.max_request_line_bytes,
                  "method, target and version, in bytes; more are answered 414")
      ->capture_default_str();
  cmd->add_option("--http-header-timeout", f->http_header_timeout,
                  "a request's headers must arrive whole within this of their first byte")
      ->capture_default_str();
  cmd->add_option("--http-body-timeout", f->http_body_timeout,
                  "a request's body must arrive whole within this of its headers")
      ->capture_default_str();
  cmd->add_option("--http-idle-timeout", f->http_idle_timeout,
                  "a kept-alive HTTP connection waiting this long for its next request is closed")
      ->capture_default_str();
}

// The cluster's origin fetch orders: how many, on whom, and how often again.
void AddFetchFlags(CLI::App* cmd, ServeFlags* f) {
  TrackerOptions& o = f->opts;
  cmd->add_option("--origin-budget", o.origin_budget,
                  "origin fetch orders in flight across the cluster")
      ->capture_default_str();
  cmd->add_option("--fetches-per-agent", o.fetches_per_agent,
                  "of those, at most this many on one agent")
      ->capture_default_str();
  cmd->add_flag("--pace-fetches-per-agent", o.pace_fetches_per_agent,
                "start each agent at one origin order and let it run more, up to "
                "--fetches-per-agent, only while more make its fetches faster");
  cmd->add_option(
         "--replicas", o.replicas,
         "owners per chunk: the first fetches it from the origin, the rest copy it from the swarm")
      ->capture_default_str();
  cmd->add_option("--fetch-done-grace", f->fetch_done_grace,
                  "a chunk delivered this recently is not fetched again when asked for")
      ->capture_default_str();
}

// The RPC port's connections, and the agents' heartbeats on them.
void AddRpcFlags(CLI::App* cmd, ServeFlags* f) {
  TrackerOptions& o = f->opts;
  cmd->add_option("--rpc-auth-timeout", f->rpc_auth_timeout,
                  "an RPC connection that has not authenticated by then is closed")
      ->capture_default_str();
  cmd->add_option("--rpc-message-timeout", f->rpc_message_timeout,
                  "an RPC message must arrive whole within this of its first byte")
      ->capture_default_str();
  cmd->add_option("--rpc-max-unauthenticated", o.rpc_max_unauthenticated,
                  "RPC connections allowed at once before they authenticate; more are closed")
      ->capture_default_str();
  cmd->add_option("--rpc-max-unauthenticated-per-client", o.rpc_max_unauthenticated_per_client,
                  "of those, from one IP address; once all are taken, a newcomer from a quieter "
                  "address replaces the busiest address's oldest")
      ->capture_default_str();
  cmd->add_option("--rpc-max-connections", o.rpc_max_connections,
                  "RPC connections open at once, authenticated or not; more are closed")
      ->capture_default_str();
  cmd->add_option("--rpc-max-connections-per-client", o.rpc_max_connections_per_client,
                  "RPC connections open at once from one IP address; more are closed")
      ->capture_default_str();
  cmd->add_option("--heartbeat-budget", o.heartbeat_budget,
                  "agent heartbeats a second this tracker takes: beyond that many agents (times "
                  "the 2 s interval) each is told a longer interval; 0: every agent every 2 s")
      ->capture_default_str();
  cmd->add_option("--rpc-threads", o.rpc_threads,
                  "event loops serving RPC connections, each taking its own (0: one fewer than the "
                  "cores, 1 to 4)")
      ->capture_default_str();
}

// Where the registry and the secrets live: for a fleet of trackers, one
// etcd and one set of secrets shared by all.
void AddFleetFlags(CLI::App* cmd, TrackerOptions& o) {
  AddRegistryFlags(cmd, &o);
  cmd->add_option("--secrets-dir", o.secrets_dir,
                  "token secret, signing key and peer CA; empty: --data-dir. Trackers of one "
                  "fleet share it");
}

// Parses one duration flag into *ms; errors name the flag.
Status ParseDurationFlag(const std::string& value, const char* flag, bool allow_zero, int64_t* ms) {
  auto d = ParseDuration(value, allow_zero);
  if (!d.ok()) return d.status().WithContext(flag);
  *ms = d->count();
  return Status::OK();
}

// --peer-security wins; --peer-tls off beside anything but off is a
// contradiction the operator should settle.
Status ApplyPeerSecurity(const std::string& security, const std::string& tls, PeerSecurity* out) {
  if (security.empty()) {
    *out = tls == "off" ? PeerSecurity::kOff : PeerSecurity::kTls;
    return Status::OK();
  }
  *out = security == "auth"  ? PeerSecurity::kAuth
         : security == "off" ? PeerSecurity::kOff
                             : PeerSecurity::kTls;
  if (tls == "off" && *out != PeerSecurity::kOff) {
    return Status::InvalidArgument("--peer-tls off contradicts --peer-security " + security +
                                   ": give only --peer-security");
  }
  return Status::OK();
}

}  // namespace

void AddServeFlags(CLI::App* cmd, ServeFlags* f) {
  TrackerOptions& o = f->opts;
  cmd->add_option("--data-dir", o.data_dir, "registry, token secret and signing key")
      ->capture_default_str();
  cmd->add_option("--rpc-listen", o.rpc_listen, "Cap'n Proto RPC address")->capture_default_str();
  cmd->add_option("--http-listen", o.http_listen, "HTTP address for /healthz, /metrics, /v1")
      ->capture_default_str();
  cmd->add_option("--port-file", o.port_file, "write 'rpc_port http_port' here once listening");
  AddOriginFlags(cmd, &o.origin);
  cmd->add_option("--upload-lease", f->upload_lease, "how long a publish holds a chunk upload")
      ->capture_default_str();
  cmd->add_option("--publish-lease", f->publish_lease,
                  "a version committed before its upload ended fails unless its publisher "
                  "renews the upload within this")
      ->capture_default_str();
  cmd->add_option("--gc-grace", f->gc_grace, "unreferenced chunks younger than this are kept")
      ->capture_default_str();
  cmd->add_option("--keep-versions", o.keep_versions,
                  "keep this many versions per model (tagged ones always); 0 = all")
      ->capture_default_str();
  cmd->add_option("--origin-parallelism", o.origin_parallelism, "concurrent origin checks")
      ->capture_default_str();
  cmd->add_option("--announce-interval", f->announce_interval, "how often agents re-announce")
      ->capture_default_str();
  cmd->add_option("--seed-announce-interval", f->seed_announce_interval,
                  "how often an agent holding a whole file re-announces it")
      ->capture_default_str();
  AddFetchFlags(cmd, f);
  AddRpcFlags(cmd, f);
  AddHttpLimitFlags(cmd, f);
  AddFleetFlags(cmd, o);
  cmd->add_option("--max-swarms", o.max_swarms,
                  "torrents with live peers at once; announces starting more are refused")
      ->capture_default_str();
  cmd->add_option("--max-swarm-peers", o.max_swarm_peers,
                  "live peers over all swarms; announces from new peers beyond it are refused")
      ->capture_default_str();
  cmd->add_option("--peer-security", f->peer_security,
                  "tls: agents exchange pieces over TLS, admitted by certificates from the "
                  "cluster's peer CA; auth: plain BitTorrent, but a peer proves it holds such a "
                  "certificate before any piece moves; off: plain BitTorrent, no admission "
                  "(default: tls, or as --peer-tls says)")
      ->check(CLI::IsMember({"tls", "auth", "off"}));
  cmd->add_option("--peer-tls", f->peer_tls,
                  "the older form of --peer-security: on = tls, off = off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--peer-cert-ttl", f->peer_cert_ttl,
                  "how long an agent's peer certificate lasts; agents renew at two thirds")
      ->capture_default_str();
  cmd->add_option("--tls-cert", o.tls_cert_file,
                  "PEM certificate chain: the RPC and HTTP ports speak TLS (with --tls-key)");
  cmd->add_option("--tls-key", o.tls_key_file,
                  "PEM private key of --tls-cert, readable by its owner only");
  AddFollowFlags(cmd, &o.follow, &f->follow);
  cmd->add_option("--log-level", f->log_level, "debug, info, warn or error")->capture_default_str();
  cmd->add_flag("--print-config", f->print_config,
                "print the effective configuration as a config file and exit")
      ->configurable(false);
}

Status ApplyServeFlags(ServeFlags& f) {
  TrackerOptions& o = f.opts;
  Result<LogLevel> level = ParseLogLevel(f.log_level);
  if (!level.ok()) return level.status();
  SetLogLevel(*level);
  SHOAL_RETURN_IF_ERROR(ParseDurationFlag(f.gc_grace, "--gc-grace", true, &o.gc_grace_ms));
  SHOAL_RETURN_IF_ERROR(
      ParseDurationFlag(f.upload_lease, "--upload-lease", false, &o.upload_lease_ms));
  SHOAL_RETURN_IF_ERROR(
      ParseDurationFlag(f.publish_lease, "--publish-lease", false, &o.publish_lease_ms));
  SHOAL_RETURN_IF_ERROR(ParseDurationFlag(f.announce_interval, "--announce-interval", false,
                                          &o.announce_interval_ms));
  SHOAL_RETURN_IF_ERROR(ParseDurationFlag(f.seed_announce_interval, "--seed-announce-interval",
                                          false, &o.seed_announce_interval_ms));
  SHOAL_RETURN_IF_ERROR(
      ParseDurationFlag(f.fetch_done_grace, "--fetch-done-grace", true, &o.fetch_done_grace_ms));
  SHOAL_RETURN_IF_ERROR(
      ParseDurationFlag(f.rpc_auth_timeout, "--rpc-auth-timeout", false, &o.rpc_auth_timeout_ms));
  SHOAL_RETURN_IF_ERROR(ParseDurationFlag(f.rpc_message_timeout, "--rpc-message-timeout", false,
                                          &o.rpc_message_timeout_ms));
  SHOAL_RETURN_IF_ERROR(
      ParseDurationFlag(f.peer_cert_ttl, "--peer-cert-ttl", false, &o.peer_cert_ttl_ms));
  SHOAL_RETURN_IF_ERROR(ParseDurationFlag(f.http_header_timeout, "--http-header-timeout", false,
                                          &o.http.header_timeout_ms));
  SHOAL_RETURN_IF_ERROR(ParseDurationFlag(f.http_body_timeout, "--http-body-timeout", false,
                                          &o.http.body_timeout_ms));
  SHOAL_RETURN_IF_ERROR(ParseDurationFlag(f.http_idle_timeout, "--http-idle-timeout", false,
                                          &o.http.idle_timeout_ms));
  SHOAL_RETURN_IF_ERROR(ApplyPeerSecurity(f.peer_security, f.peer_tls, &o.peer_security));
  SHOAL_RETURN_IF_ERROR(ApplyFollowFlags(f.follow, &o.follow));
  return o.Validate();
}

}  // namespace shoal::tracker
