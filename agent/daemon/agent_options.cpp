#include "daemon/agent_options.h"

#include <algorithm>
#include <thread>

#include "shoal/manifest.h"

namespace shoal {

Status AgentOptions::Validate() const {
  if (tracker.Addresses().empty()) return Status::InvalidArgument("--tracker must be set");
  if (token.empty()) {
    return Status::InvalidArgument(
        "--token must be set (an agent token: shoal-tracker token create --ns '*' --role read)");
  }
  if (cache_dir.empty()) return Status::InvalidArgument("--cache-dir must be set");
  if (!https_listen.empty() && (https_cert_file.empty() || https_key_file.empty())) {
    return Status::InvalidArgument("--https-listen needs --https-cert and --https-key");
  }
  if (https_listen.empty() && !(https_cert_file.empty() && https_key_file.empty())) {
    return Status::InvalidArgument("--https-cert and --https-key need --https-listen");
  }
  for (const std::string& m : hub_namespaces) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
      return Status::InvalidArgument("--hub-namespace '" + m + "' is not ORG=NAMESPACE");
    SHOAL_RETURN_IF_ERROR(
        ValidateName("namespace", m.substr(eq + 1)).WithContext("--hub-namespace"));
  }
  if (cache_bytes < (64ull << 20))
    return Status::InvalidArgument("--cache-bytes must be at least 64 MiB");
  if (control_socket.empty()) return Status::InvalidArgument("--control-socket must be set");
  if (origin_fallback_ms < 0)
    return Status::InvalidArgument("--origin-fallback must not be negative");
  if (hand_on_owners < 0 || hand_on_owners > 7)
    return Status::InvalidArgument("--hand-on-owners must be 0 to 7");
  if (hand_on_hold_ms < 0 || hand_on_hold_ms > 60000)
    return Status::InvalidArgument("--hand-on-hold-ms must be 0 to 60000");
  if (stall_timeout_ms < 1000)
    return Status::InvalidArgument("--stall-timeout-ms must be at least 1000");
  if (control_socket_mode.empty() || control_socket_mode.size() > 4 ||
      control_socket_mode.find_first_not_of("01234567") != std::string::npos ||
      (std::stoul(control_socket_mode, nullptr, 8) & ~0777ul) != 0) {
    return Status::InvalidArgument("--control-socket-mode '" + control_socket_mode +
                                   "' is not an octal mode from 0000 to 0777");
  }
  if (peer_sessions < 0 || peer_sessions > 64) {
    return Status::InvalidArgument("--peer-sessions must be 0 (one per two cores) to 64");
  }
  if (origin_parallelism < 1 || origin_parallelism > 64) {
    return Status::InvalidArgument("--origin-parallelism must be 1 to 64");
  }
  if (http_threads < 1 || http_threads > 64)
    return Status::InvalidArgument("--http-threads must be 1 to 64");
  SHOAL_RETURN_IF_ERROR(http.Validate("-ms"));
  if (read_max_per_token < 1)
    return Status::InvalidArgument("--read-max-per-token must be at least 1");
  if (read_cache_ms < 0) return Status::InvalidArgument("--read-cache-ms must not be negative");
  if (read_origin_wait_ms < 0)
    return Status::InvalidArgument("--read-origin-wait-ms must not be negative");
  if (read_first_byte_timeout_ms < 100 || read_first_byte_timeout_ms > 600000)
    return Status::InvalidArgument("--read-first-byte-timeout-ms must be in [100, 600000]");
  if (read_ahead_pieces < 0 || read_ahead_pieces > 64) {
    return Status::InvalidArgument("--read-ahead-pieces must be 0 to 64");
  }
  if (!origin.url.empty()) SHOAL_RETURN_IF_ERROR(origin.Validate().WithContext("origin"));
  for (const std::string& label : labels) {
    size_t eq = label.find('=');
    if (eq == std::string::npos || eq == 0 || label.size() > 128) {
      return Status::InvalidArgument("--label '" + label.substr(0, 130) +
                                     "' must be key=value, at most 128 bytes");
    }
  }
  return Status::OK();
}

MissingChunkOptions AgentOptions::MissingChunks() const {
  MissingChunkOptions m;
  m.origin_fallback_ms = origin_fallback_ms;
  m.origin_parallelism = origin_parallelism;
  m.read_origin_wait_ms = read_origin_wait_ms;
  return m;
}

int DefaultPeerSessions() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 2, 1, 64);
}

int PeerSessionsOf(const AgentOptions& options) {
  return options.peer_sessions > 0 ? options.peer_sessions : DefaultPeerSessions();
}

}  // namespace shoal
