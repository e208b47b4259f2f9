#include "p2p/engine_options.h"

namespace shoal {

namespace {

Status Range(const char* name, int v, int lo, int hi) {
  if (v >= lo && v <= hi) return Status::OK();
  return Status::InvalidArgument(std::string(name) + " must be in [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + "], got " + std::to_string(v));
}

}  // namespace

Status EngineOptions::Validate() const {
  auto colon = listen.rfind(':');
  if (listen.empty() || colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return Status::InvalidArgument("listen must be IP:PORT (e.g. 0.0.0.0:6881), got '" + listen +
                                   "'");
  }
  for (size_t i = colon + 1; i < listen.size(); ++i) {
    if (listen[i] < '0' || listen[i] > '9') {
      return Status::InvalidArgument("listen port must be a number, got '" + listen + "'");
    }
  }
  if (std::stoul(listen.substr(colon + 1, 6)) > 65535) {
    return Status::InvalidArgument("listen port must be at most 65535, got '" + listen + "'");
  }
  SHOAL_RETURN_IF_ERROR(Range("sessions", sessions, 1, 64));
  SHOAL_RETURN_IF_ERROR(Range("disk_threads", disk_threads, 1, 16));
  SHOAL_RETURN_IF_ERROR(Range("send_buffer_kib", send_buffer_kib, 16, 262144));
  SHOAL_RETURN_IF_ERROR(Range("socket_buffer_kib", socket_buffer_kib, 0, 262144));
  SHOAL_RETURN_IF_ERROR(Range("min_announce_interval_s", min_announce_interval_s, 1, 3600));
  SHOAL_RETURN_IF_ERROR(Range("max_connections", max_connections, 2, 65535));
  SHOAL_RETURN_IF_ERROR(Range("eviction_batch_ms", eviction_batch_ms, 0, 60000));
  SHOAL_RETURN_IF_ERROR(Range("add_timeout_ms", add_timeout_ms, 100, 600000));
  SHOAL_RETURN_IF_ERROR(Range("handshake_timeout_s", handshake_timeout_s, 1, 300));
  SHOAL_RETURN_IF_ERROR(Range("peer_timeout_s", peer_timeout_s, 4, 600));
  SHOAL_RETURN_IF_ERROR(Range("message_stall_s", message_stall_s, 1, 300));
  if (upload_rate > (uint64_t{1} << 31) - 1) {
    return Status::InvalidArgument("upload_rate must be below 2 GiB per second, got " +
                                   std::to_string(upload_rate));
  }
  return Status::OK();
}

}  // namespace shoal
