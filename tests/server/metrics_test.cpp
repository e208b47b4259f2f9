// Metrics: the registry renders the Prometheus text format exactly, escapes
// what it must, and counts correctly under concurrency.
#include "shoal/server/metrics.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <thread>
#include <vector>

using namespace shoal;

namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("families render with HELP and TYPE once, sorted by name", "[metrics]") {
  MetricsRegistry r;
  r.counter("shoal_uploads_total", "Chunks uploaded.", {{"origin", "s3"}}).Increment(3);
  r.counter("shoal_uploads_total", "Chunks uploaded.", {{"origin", "file"}}).Increment();
  r.gauge("shoal_cache_bytes", "Bytes in the cache.").Set(1.5);
  CHECK(Lines(r.Render()) == std::vector<std::string>{
                                 "# HELP shoal_cache_bytes Bytes in the cache.",
                                 "# TYPE shoal_cache_bytes gauge",
                                 "shoal_cache_bytes 1.5",
                                 "# HELP shoal_uploads_total Chunks uploaded.",
                                 "# TYPE shoal_uploads_total counter",
                                 "shoal_uploads_total{origin=\"file\"} 1",
                                 "shoal_uploads_total{origin=\"s3\"} 3",
                             });
}

TEST_CASE("the same name and labels return the same metric", "[metrics]") {
  MetricsRegistry r;
  Counter& a = r.counter("c_total", "c", {{"k", "v"}});
  Counter& b = r.counter("c_total", "c", {{"k", "v"}});
  Counter& other = r.counter("c_total", "c", {{"k", "w"}});
  CHECK(&a == &b);
  CHECK(&a != &other);
  CHECK(&r.gauge("g", "g") == &r.gauge("g", "g"));
  CHECK_THROWS_AS(r.gauge("c_total", "now a gauge"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("9starts_with_digit", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("has-dash", "x"), std::invalid_argument);
  CHECK_NOTHROW(r.counter("ns:sub_name_total", "colons are allowed"));
  CHECK_THROWS_AS(r.counter("ok_total", "x", {{"bad-label", "v"}}), std::invalid_argument);
}

TEST_CASE("label values and help text are escaped", "[metrics]") {
  MetricsRegistry r;
  r.counter("e_total", "line one\nback\\slash \"quoted\"", {{"path", "a\"b\\c\nd"}}).Increment();
  std::vector<std::string> lines = Lines(r.Render());
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == R"(# HELP e_total line one\nback\\slash "quoted")");
  CHECK(lines[2] == R"(e_total{path="a\"b\\c\nd"} 1)");
}

TEST_CASE("a histogram renders cumulative buckets, sum and count", "[metrics]") {
  MetricsRegistry r;
  Histogram& h = r.histogram("req_seconds", "Request latency.", {0.1, 1}, {{"route", "/x"}});
  h.Observe(0.05);
  h.Observe(0.1);  // upper bounds are inclusive
  h.Observe(0.5);
  h.Observe(7);
  CHECK(Lines(r.Render()) == std::vector<std::string>{
                                 "# HELP req_seconds Request latency.",
                                 "# TYPE req_seconds histogram",
                                 "req_seconds_bucket{route=\"/x\",le=\"0.1\"} 2",
                                 "req_seconds_bucket{route=\"/x\",le=\"1\"} 3",
                                 "req_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4",
                                 "req_seconds_sum{route=\"/x\"} 7.65",
                                 "req_seconds_count{route=\"/x\"} 4",
                             });
  CHECK_THROWS_AS(Histogram({1, 1}), std::invalid_argument);
}

TEST_CASE("collectors add values computed at scrape time", "[metrics]") {
  MetricsRegistry r;
  r.counter("origin_puts_total", "PUTs.", {{"origin", "a"}}).Increment(2);
  int scrapes = 0;
  r.AddCollector([&](MetricsWriter& w) {
    ++scrapes;
    w.AddCounter("origin_puts_total", "PUTs.", 5, {{"origin", "b"}});
    w.AddGauge("origin_up", "Reachable.", 1);
    w.AddGauge("origin_puts_total", "wrong type is dropped", 9);
  });
  std::string text = r.Render();
  CHECK(scrapes == 1);
  std::vector<std::string> lines = Lines(text);
  CHECK(lines == std::vector<std::string>{
                     "# HELP origin_puts_total PUTs.",
                     "# TYPE origin_puts_total counter",
                     "origin_puts_total{origin=\"a\"} 2",
                     "origin_puts_total{origin=\"b\"} 5",
                     "# HELP origin_up Reachable.",
                     "# TYPE origin_up gauge",
                     "origin_up 1",
                 });
}

TEST_CASE("concurrent increments are all counted", "[metrics]") {
  MetricsRegistry r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&r, t] {
      for (int i = 0; i < 20000; ++i) {
        r.counter("hits_total", "Hits.", {{"shard", std::to_string(t % 2)}}).Increment();
        r.gauge("level", "Level.").Add(0.5);
        if (i % 100 == 0) r.Render();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(r.counter("hits_total", "Hits.", {{"shard", "0"}}).value() == 80000);
  CHECK(r.counter("hits_total", "Hits.", {{"shard", "1"}}).value() == 80000);
  CHECK(r.gauge("level", "Level.").value() == 80000.0);
  CHECK(r.Render().find("hits_total{shard=\"1\"} 80000\n") != std::string::npos);
}
