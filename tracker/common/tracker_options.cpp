#include "common/tracker_options.h"

#include "shoal/manifest.h"

namespace shoal::tracker {

const char* PeerSecurityName(PeerSecurity s) {
  switch (s) {
    case PeerSecurity::kTls:
      return "tls";
    case PeerSecurity::kAuth:
      return "auth";
    case PeerSecurity::kOff:
      break;
  }
  return "off";
}

Status TrackerOptions::Validate() const {
  if (data_dir.empty()) return Status::InvalidArgument("--data-dir must be set");
  if (rpc_listen.empty()) return Status::InvalidArgument("--rpc-listen must be set");
  if (upload_lease_ms <= 0) return Status::InvalidArgument("--upload-lease must be positive");
  if (publish_lease_ms < 1000 || publish_lease_ms > 24 * 3600 * 1000) {
    return Status::InvalidArgument("--publish-lease must be 1s to 24h");
  }
  if (seed_announce_interval_ms < announce_interval_ms) {
    return Status::InvalidArgument("--seed-announce-interval must be at least --announce-interval");
  }
  if (gc_grace_ms < 0) return Status::InvalidArgument("--gc-grace must not be negative");
  if (origin_parallelism < 1 || origin_parallelism > 256) {
    return Status::InvalidArgument("--origin-parallelism must be 1 to 256");
  }
  if (!(heartbeat_budget >= 0)) {
    return Status::InvalidArgument("--heartbeat-budget must be 0 (no pacing) or more");
  }
  if (rpc_threads < 0 || rpc_threads > 64) {
    return Status::InvalidArgument("--rpc-threads must be 0 (one fewer than the cores) to 64");
  }
  if (blocking_threads < 1 || blocking_threads > 64) {
    return Status::InvalidArgument("--blocking-threads must be 1 to 64");
  }
  if (origin_budget < 1 || origin_budget > 4096)
    return Status::InvalidArgument("--origin-budget must be 1 to 4096");
  if (fetches_per_agent < 1 || fetches_per_agent > 256) {
    return Status::InvalidArgument("--fetches-per-agent must be 1 to 256");
  }
  if (replicas < 1 || replicas > 8) return Status::InvalidArgument("--replicas must be 1 to 8");
  if (fetch_done_grace_ms < 0)
    return Status::InvalidArgument("--fetch-done-grace must not be negative");
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  if (rpc_auth_timeout_ms <= 0)
    return Status::InvalidArgument("--rpc-auth-timeout must be positive");
  if (rpc_message_timeout_ms <= 0)
    return Status::InvalidArgument("--rpc-message-timeout must be positive");
  if (rpc_max_unauthenticated < 1 || rpc_max_unauthenticated > 65536) {
    return Status::InvalidArgument("--rpc-max-unauthenticated must be 1 to 65536");
  }
  if (rpc_max_unauthenticated_per_client < 1) {
    return Status::InvalidArgument("--rpc-max-unauthenticated-per-client must be at least 1");
  }
  if (rpc_max_connections < 1)
    return Status::InvalidArgument("--rpc-max-connections must be at least 1");
  if (rpc_max_connections_per_client < 1)
    return Status::InvalidArgument("--rpc-max-connections-per-client must be at least 1");
  SHOAL_RETURN_IF_ERROR(http.Validate(""));
  if (max_swarms < 1) return Status::InvalidArgument("--max-swarms must be at least 1");
  if (max_swarm_peers < 1) return Status::InvalidArgument("--max-swarm-peers must be at least 1");
  SHOAL_RETURN_IF_ERROR(origin.Validate().WithContext("origin"));
  return follow.Validate();
}

bool FollowOptions::Mirrors(const std::string& ns) const {
  if (!enabled()) return false;
  for (const std::string& n : namespaces) {
    if (n == ns) return true;
  }
  return false;
}

Status FollowOptions::Validate() const {
  if (!enabled()) {
    if (!namespaces.empty()) return Status::InvalidArgument("--follow-ns needs --follow");
    return Status::OK();
  }
  if (namespaces.empty()) {
    return Status::InvalidArgument("--follow needs at least one --follow-ns");
  }
  for (const std::string& ns : namespaces) {
    if (ns == "*") return Status::InvalidArgument("--follow-ns names namespaces, not '*'");
    SHOAL_RETURN_IF_ERROR(ValidateName("namespace", ns).WithContext("--follow-ns"));
  }
  if (token.empty()) {
    return Status::InvalidArgument(
        "--follow needs the upstream's read token: --follow-token-file or SHOAL_FOLLOW_TOKEN");
  }
  if (origin.url.empty()) {
    return Status::InvalidArgument("--follow needs the upstream's origin: --follow-origin");
  }
  if (parallelism < 1 || parallelism > 64) {
    return Status::InvalidArgument("--follow-parallelism must be 1 to 64");
  }
  if (wait_ms < 100 || wait_ms > 60000) {
    return Status::InvalidArgument("--follow-wait must be 100ms to 60s");
  }
  return origin.Validate().WithContext("--follow-origin");
}

}  // namespace shoal::tracker
