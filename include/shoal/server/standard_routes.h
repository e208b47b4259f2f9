// The routes every Shoal daemon serves.
#ifndef SHOAL_SERVER_STANDARD_ROUTES_H_
#define SHOAL_SERVER_STANDARD_ROUTES_H_

#include <functional>

#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"
#include "shoal/status.h"

namespace shoal {

// GET /metrics: `metrics` rendered as "text/plain; version=0.0.4".
// GET /healthz: 200 "ok" when `health` returns OK, else 503 with its message.
// REQUIRES: `metrics` and `health` outlive `server`; `health` is thread-safe.
void AddStandardRoutes(HttpServer& server, MetricsRegistry& metrics,
                       std::function<Status()> health);

}  // namespace shoal

#endif  // SHOAL_SERVER_STANDARD_ROUTES_H_
