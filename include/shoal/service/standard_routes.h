// The routes every Shoal daemon serves.
#ifndef SHOAL_SERVICE_STANDARD_ROUTES_H_
#define SHOAL_SERVICE_STANDARD_ROUTES_H_

#include <functional>

#include "shoal/service/http_server.h"
#include "shoal/service/metrics.h"
#include "shoal/status.h"

namespace shoal {

// GET /metrics: `metrics` rendered as "text/plain; version=0.0.4".
// GET /healthz: 200 "ok" when `health` returns OK, else 503 with its message.
// REQUIRES: `metrics` and `health` outlive `server`; `health` is thread-safe.
void AddStandardRoutes(HttpServer& server, MetricsRegistry& metrics,
                       std::function<Status()> health);

}  // namespace shoal

#endif  // SHOAL_SERVICE_STANDARD_ROUTES_H_
