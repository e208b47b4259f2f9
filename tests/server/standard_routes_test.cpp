// /metrics and /healthz, as Prometheus and a Kubernetes probe see them.
#include "shoal/server/standard_routes.h"

#include <atomic>
#include <catch2/catch.hpp>

#include "server/http_test_client.h"

using namespace shoal;
using shoal::testing::Fetch;
using shoal::testing::RawResponse;

TEST_CASE("/metrics serves the registry and /healthz the health check", "[http]") {
  MetricsRegistry metrics;
  metrics.counter("shoal_test_requests_total", "Requests.").Increment(7);
  std::atomic<bool> healthy{true};
  HttpServer server(HttpServerOptions{});
  AddStandardRoutes(server, metrics, [&] {
    return healthy ? Status::OK() : Status::Unavailable("origin s3://ckpt is unreachable");
  });
  REQUIRE(server.Start().ok());

  RawResponse m = Fetch(server.port(), "GET", "/metrics");
  CHECK(m.status == 200);
  CHECK(m.headers["content-type"].rfind("text/plain; version=0.0.4", 0) == 0);
  CHECK(m.body.find("# TYPE shoal_test_requests_total counter\nshoal_test_requests_total 7\n") !=
        std::string::npos);

  RawResponse ok = Fetch(server.port(), "GET", "/healthz");
  CHECK(ok.status == 200);
  CHECK(ok.body == "ok\n");
  healthy = false;
  RawResponse bad = Fetch(server.port(), "GET", "/healthz");
  CHECK(bad.status == 503);
  CHECK(bad.body == "unavailable: origin s3://ckpt is unreachable\n");
  CHECK(Fetch(server.port(), "HEAD", "/healthz").status == 503);
}
