#include "shoal/server/standard_routes.h"

namespace shoal {

void AddStandardRoutes(HttpServer& server, MetricsRegistry& metrics,
                       std::function<Status()> health) {
  server.Handle("GET", "/metrics", [&metrics](const HttpRequest&) {
    HttpResponse r;
    r.headers.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    r.body = metrics.Render();
    return r;
  });
  server.Handle("GET", "/healthz", [health = std::move(health)](const HttpRequest&) {
    Status s = health();
    if (s.ok()) return HttpResponse::Text(200, "ok\n");
    return HttpResponse::Text(503, s.ToString() + "\n");
  });
}

}  // namespace shoal
