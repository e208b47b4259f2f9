// A full server keeps newcomers in: it closes the oldest idle connection of
// the address holding the most, on real sockets. Other loopback addresses
// (127.0.0.2, ...) stand in for other clients; Linux routes 127/8 to lo.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/http_test_client.h"
#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"

using namespace shoal;
using shoal::testing::RawResponse;
using shoal::testing::TestConnection;
using std::chrono::milliseconds;

namespace {

// Requests to GET /slow, left unanswered until the test lets them go.
class HeldRequests {
 public:
  void Hold(HttpResponder respond) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back(std::move(respond));
    arrived_.notify_all();
  }
  // True once `n` requests are held; false after 5 s.
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return arrived_.wait_for(lock, std::chrono::seconds(5), [&] { return held_.size() >= n; });
  }
  void AnswerAll() {
    std::vector<HttpResponder> answers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      answers.swap(held_);
    }
    for (HttpResponder& respond : answers) respond(HttpResponse::Text(200, "late"));
  }

 private:
  std::mutex mu_;
  std::condition_variable arrived_;
  std::vector<HttpResponder> held_;
};

// A server with GET /hello and the held GET /slow, counting into its own
// registry.
struct EvictingServer {
  explicit EvictingServer(HttpServerOptions options) : server(WithMetrics(options, &metrics)) {
    server.Handle("GET", "/hello",
                  [](const HttpRequest&) { return HttpResponse::Text(200, "hi"); });
    server.HandleAsync("GET", "/slow", [this](const HttpRequest&, HttpResponder respond) {
      held.Hold(std::move(respond));
    });
    REQUIRE(server.Start().ok());
  }
  // Every responder is called before the server stops.
  ~EvictingServer() { held.AnswerAll(); }

  static HttpServerOptions WithMetrics(HttpServerOptions o, MetricsRegistry* m) {
    o.metrics = m;
    return o;
  }
  uint64_t Count(const char* name, const char* reason) {
    return metrics.counter(name, "", {{"listener", "http"}, {"reason", reason}}).value();
  }
  uint16_t port() { return server.port(); }

  MetricsRegistry metrics;
  HttpServer server;
  HeldRequests held;
};

// Sends a request on `c` and reads its answer, keeping the connection; 0 if
// the server closed it instead.
int Hello(TestConnection& c) {
  if (!c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")) return 0;
  return c.Read().status;
}

// A connection from `from` whose request to /slow is being answered.
std::unique_ptr<TestConnection> Busy(EvictingServer& s, const char* from, size_t held_before) {
  auto c = std::make_unique<TestConnection>(s.port(), from);
  REQUIRE(c->Send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"));
  REQUIRE(s.held.WaitFor(held_before + 1));
  return c;
}

}  // namespace

TEST_CASE("a full server closes the busiest address's oldest idle connection for a newcomer",
          "[http][limits]") {
  HttpServerOptions o;
  o.max_connections = 10;
  o.max_connections_per_client = 4;
  EvictingServer s(o);
  // 127.0.0.2 holds the most, four: its oldest has a request under way,
  // the next three wait for their first request. 127.0.0.3 holds three,
  // kept alive after a request each; 127.0.0.4 three that never spoke.
  std::unique_ptr<TestConnection> busy = Busy(s, "127.0.0.2", 0);
  std::vector<std::unique_ptr<TestConnection>> idle;  // in the order opened
  for (const char* from : {"127.0.0.2", "127.0.0.3", "127.0.0.4"}) {
    for (int i = 0; i < 3; ++i) {
      idle.push_back(std::make_unique<TestConnection>(s.port(), from));
      REQUIRE(idle.back()->connected());
    }
  }
  for (int i = 3; i < 6; ++i) REQUIRE(Hello(*idle[i]) == 200);
  std::this_thread::sleep_for(milliseconds(100));  // the server is full now

  TestConnection newcomer(s.port(), "127.0.0.5");
  CHECK(Hello(newcomer) == 200);
  // The oldest idle connection of 127.0.0.2 made room; the rest stay.
  CHECK(idle[0]->ReadsEof(milliseconds(2000)));
  for (size_t i = 1; i < idle.size(); ++i) CHECK(Hello(*idle[i]) == 200);
  CHECK(s.Count("shoal_http_connections_cut_total", "evicted_idle") == 1);
  CHECK(s.Count("shoal_http_connections_refused_total", "too_many_connections") == 0);
  // The request under way was left to finish.
  s.held.AnswerAll();
  RawResponse late = busy->Read();
  CHECK(late.status == 200);
  CHECK(late.body == "late");
}

TEST_CASE("a full server refuses a newcomer when no connection is idle", "[http][limits]") {
  HttpServerOptions o;
  o.max_connections = 2;
  o.max_connections_per_client = 2;
  EvictingServer s(o);
  std::unique_ptr<TestConnection> a = Busy(s, "127.0.0.2", 0);
  std::unique_ptr<TestConnection> b = Busy(s, "127.0.0.2", 1);

  TestConnection newcomer(s.port(), "127.0.0.3");
  RawResponse refused = newcomer.Read();
  CHECK(refused.status == 503);
  CHECK(refused.headers["retry-after"] == "1");
  CHECK(newcomer.ServerClosed());
  CHECK(s.Count("shoal_http_connections_refused_total", "too_many_connections") == 1);
  CHECK(s.Count("shoal_http_connections_cut_total", "evicted_idle") == 0);
  s.held.AnswerAll();
  CHECK(a->Read().status == 200);
  CHECK(b->Read().status == 200);
}

TEST_CASE("unix socket clients are never evicted to make room", "[http][limits]") {
  char dir[] = "/tmp/shoal-http-evict-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  HttpServerOptions o;
  o.unix_socket = std::string(dir) + "/http.sock";
  o.max_connections = 2;
  EvictingServer s(o);
  auto connect = [&] {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", o.unix_socket.c_str());
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    return fd;
  };
  int first = connect(), second = connect();  // both idle
  int third = connect();
  char buf[256] = {};
  REQUIRE(::recv(third, buf, sizeof(buf) - 1, 0) > 0);
  CHECK(std::string(buf).rfind("HTTP/1.1 503", 0) == 0);
  std::this_thread::sleep_for(milliseconds(100));
  for (int fd : {first, second}) {  // still open, nothing to read
    CHECK(::recv(fd, buf, 1, MSG_DONTWAIT) < 0);
    CHECK(errno == EAGAIN);
  }
  CHECK(s.Count("shoal_http_connections_cut_total", "evicted_idle") == 0);
  for (int fd : {first, second, third}) ::close(fd);
  s.server.Stop();
  ::rmdir(dir);
}
