#include "shoal/server/http_limits.h"

#include <chrono>

#include "shoal/server/http_server.h"

namespace shoal {

Status HttpLimits::Validate(const std::string& timeout_suffix) const {
  if (max_connections < 1 || max_connections > 1000000)
    return Status::InvalidArgument("--http-max-connections must be 1 to 1000000");
  if (max_connections_per_client < 1)
    return Status::InvalidArgument("--http-max-connections-per-client must be at least 1");
  if (max_header_bytes < 1024)
    return Status::InvalidArgument("--http-max-header-bytes must be at least 1024");
  if (max_request_line_bytes < 64)
    return Status::InvalidArgument("--http-max-request-line-bytes must be at least 64");
  if (header_timeout_ms <= 0 || body_timeout_ms <= 0 || idle_timeout_ms <= 0) {
    return Status::InvalidArgument(
        "--http-header-timeout" + timeout_suffix + ", --http-body-timeout" + timeout_suffix +
        " and --http-idle-timeout" + timeout_suffix + " must be positive");
  }
  return Status::OK();
}

void HttpLimits::ApplyTo(HttpServerOptions* o) const {
  o->max_connections = max_connections;
  o->max_connections_per_client = max_connections_per_client;
  o->max_header_bytes = max_header_bytes;
  o->max_request_line_bytes = max_request_line_bytes;
  o->header_timeout = std::chrono::milliseconds(header_timeout_ms);
  o->body_timeout = std::chrono::milliseconds(body_timeout_ms);
  o->idle_timeout = std::chrono::milliseconds(idle_timeout_ms);
}

}  // namespace shoal
