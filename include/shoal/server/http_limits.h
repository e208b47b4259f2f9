// HttpLimits: the bounds a Shoal daemon keeps on its HTTP clients, one set
// for shoald and shoal-tracker alike. Each daemon binds its flags to the
// fields ("--http-max-connections" and so on), checks them with Validate,
// and copies them into its servers' HttpServerOptions with ApplyTo.
#ifndef SHOAL_SERVER_HTTP_LIMITS_H_
#define SHOAL_SERVER_HTTP_LIMITS_H_

#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal {

struct HttpServerOptions;

struct HttpLimits {
  // Open at once; more get 503 and are closed, unless the busiest address
  // has an idle connection to give up (see HttpServerOptions).
  uint32_t max_connections = 4096;
  uint32_t max_connections_per_client = 256;   // ... from one IP address; the unix socket is exempt
  uint32_t max_header_bytes = 16 * 1024;       // request line and headers; more gets 431
  uint32_t max_request_line_bytes = 8 * 1024;  // more gets 414
  int64_t header_timeout_ms = 10000;           // a request's header must arrive whole within this
  int64_t body_timeout_ms = 60000;             // its body within this of the header
  int64_t idle_timeout_ms = 30000;  // a kept-alive connection may wait this for a request

  // InvalidArgument naming the flag ("--http-" and the field's name) of the
  // first bound out of range. The timeout flags end in `timeout_suffix`
  // ("-ms" for shoald's, "" for shoal-tracker's durations).
  Status Validate(const std::string& timeout_suffix) const;
  // Copies the bounds into `o`.
  void ApplyTo(HttpServerOptions* o) const;
};

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_LIMITS_H_
