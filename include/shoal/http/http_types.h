// The plain vocabulary of the origin's HTTP client: where to connect, what
// to send, what came back. No Beast or Asio types appear here, so the S3
// code that builds requests compiles without them.
#ifndef SHOAL_HTTP_HTTP_TYPES_H_
#define SHOAL_HTTP_HTTP_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shoal/http_headers.h"
#include "shoal/status.h"

namespace shoal {

struct HttpEndpoint {
  bool tls = false;
  std::string host;  // name or IP literal, without brackets
  uint16_t port = 0;

  // "host" or "host:port" when the port is not the scheme's default.
  std::string HostHeader() const;
  // "http://host:port"
  std::string ToString() const;
};

// Parses "http://host[:port]" or "https://host[:port]" (a trailing '/' is
// allowed, a path is not).
Result<HttpEndpoint> ParseHttpEndpoint(const std::string& url);

struct HttpTimeouts {
  uint32_t connect_ms = 5000;  // resolve + connect + TLS handshake
  uint32_t io_ms = 30000;      // longest wait for progress on any read or write
};

struct OriginHttpRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // encoded path and query: "/bucket/key?uploadId=..."
  HttpHeaders headers;
  const uint8_t* body = nullptr;  // not owned; must outlive the exchange
  size_t body_len = 0;
};

struct OriginHttpResponse {
  int status = 0;
  HttpHeaders headers;  // names in lower case
  std::string body;     // the body when it was not streamed into a sink

  // The first header named `name` (lower case), or "".
  std::string Header(const std::string& name) const;
};

}  // namespace shoal

#endif  // SHOAL_HTTP_HTTP_TYPES_H_
