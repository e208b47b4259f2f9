// The HTTP server on real sockets: routing, HEAD, keep-alive, limits, a
// throwing handler, file bodies and many clients at once.
#include "shoal/server/http_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "server/http_test_client.h"

using namespace shoal;
using shoal::testing::Fetch;
using shoal::testing::RawResponse;
using shoal::testing::TestConnection;

namespace {

// A server with a few routes, started on a free port.
struct TestServer {
  explicit TestServer(HttpServerOptions options = {}) : server(options) {
    server.Handle("GET", "/hello",
                  [](const HttpRequest&) { return HttpResponse::Text(200, "hello world\n"); });
    server.Handle("POST", "/echo", [](const HttpRequest& r) {
      HttpResponse res = HttpResponse::Text(200, r.body);
      res.headers.Set("X-Method", r.method);
      return res;
    });
    server.Handle("GET", "/files/*", [](const HttpRequest& r) {
      std::string out = "path=" + r.path;
      for (const auto& [k, v] : r.query) out += " " + k + "=" + v;
      out += " trace=" + r.headers.Get("x-TRACE").value_or("-");
      out += " remote=" + r.remote_address.substr(0, r.remote_address.rfind(':'));
      return HttpResponse::Text(200, out);
    });
    server.Handle("GET", "/files/special",
                  [](const HttpRequest&) { return HttpResponse::Text(200, "exact wins"); });
    server.Handle("GET", "/boom", [](const HttpRequest&) -> HttpResponse {
      throw std::runtime_error("handler bug");
    });
    server.Handle("GET", "/bad-response", [](const HttpRequest& r) {
      HttpResponse res = HttpResponse::Text(r.query.count("status") ? 999 : 200, "x");
      res.headers.Set("X-Injected", "a\r\nSet-Cookie: evil=1");
      res.headers.Set("X-Fine", "yes");
      return res;
    });
    REQUIRE(server.Start().ok());
  }
  HttpServer server;
};

std::string Get(TestConnection& c, const std::string& target) {
  REQUIRE(c.Send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n"));
  RawResponse r = c.Read();
  REQUIRE(r.status == 200);
  return r.body;
}

}  // namespace

TEST_CASE("GET returns the handler's body and HEAD the same headers without it", "[http]") {
  TestServer s;
  RawResponse get = Fetch(s.server.port(), "GET", "/hello");
  CHECK(get.status == 200);
  CHECK(get.body == "hello world\n");
  CHECK(get.headers["content-length"] == "12");
  CHECK(get.headers["content-type"] == "text/plain; charset=utf-8");

  // On one connection, so a stray body after HEAD would corrupt the next reply.
  TestConnection c(s.server.port());
  REQUIRE(c.Send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  RawResponse head = c.Read(true);
  CHECK(head.status == 200);
  CHECK(head.headers["content-length"] == "12");
  CHECK(head.headers["content-type"] == "text/plain; charset=utf-8");
  CHECK(Get(c, "/hello") == "hello world\n");
}

TEST_CASE("a connection serves many requests, pipelined too", "[http]") {
  TestServer s;
  TestConnection c(s.server.port());
  for (int i = 0; i < 5; ++i) CHECK(Get(c, "/hello") == "hello world\n");
  REQUIRE(
      c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
             "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde"
             "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  CHECK(c.Read().body == "hello world\n");
  RawResponse echo = c.Read();
  CHECK(echo.body == "abcde");
  CHECK(echo.headers["x-method"] == "POST");
  RawResponse last = c.Read();
  CHECK(last.body == "hello world\n");
  CHECK(last.headers["connection"] == "close");
  CHECK(c.ServerClosed());
}

TEST_CASE("a client expecting 100-continue is invited to send its body", "[http]") {
  TestServer s;
  TestConnection c(s.server.port());
  REQUIRE(
      c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
             "Expect: 100-continue\r\n\r\n"));
  CHECK(c.Read(true).status == 100);
  REQUIRE(c.Send("xyz"));
  RawResponse r = c.Read();
  CHECK(r.status == 200);
  CHECK(r.body == "xyz");
}

TEST_CASE("curl expecting 100-continue sends its body without a one-second wait", "[http]") {
  TestServer s;
  std::string cmd =
      "head -c 5000 /dev/zero | tr '\\0' 'z' | curl -s -S --max-time 5 -H 'Expect: 100-continue' "
      "-w ' %{http_code} %{time_total}' --data-binary @- "
      "http://127.0.0.1:" +
      std::to_string(s.server.port()) + "/echo";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  CHECK(out.substr(0, 5000) == std::string(5000, 'z'));
  double seconds = std::stod(out.substr(out.rfind(' ') + 1));
  CHECK(out.substr(5000, 5) == " 200 ");
  CHECK(seconds < 0.9);  // curl waits a full second when no 100 Continue comes
}

TEST_CASE("paths are decoded, queries parsed and exact routes beat prefixes", "[http]") {
  TestServer s;
  RawResponse r = Fetch(s.server.port(), "GET", "/files/a%20b/c.bin?x=1&name=hello+there%21&flag",
                        "X-Trace: abc\r\n");
  CHECK(r.status == 200);
  CHECK(r.body == "path=/files/a b/c.bin flag= name=hello there! x=1 trace=abc remote=127.0.0.1");
  CHECK(Fetch(s.server.port(), "GET", "/files/special").body == "exact wins");
  CHECK(Fetch(s.server.port(), "GET", "/files/bad%zz").status == 400);
  CHECK(Fetch(s.server.port(), "GET", "/files/nul%00").status == 400);
}

TEST_CASE("unknown paths get a JSON 404 and wrong methods a 405", "[http]") {
  TestServer s;
  RawResponse missing = Fetch(s.server.port(), "GET", "/nope");
  CHECK(missing.status == 404);
  CHECK(missing.headers["content-type"] == "application/json");
  CHECK(missing.body == "{\"error\":\"no route for GET /nope\"}\n");
  RawResponse wrong = Fetch(s.server.port(), "DELETE", "/hello");
  CHECK(wrong.status == 405);
  CHECK(wrong.headers["allow"] == "GET, HEAD");
}

TEST_CASE("oversized headers get 431 and oversized bodies 413", "[http]") {
  HttpServerOptions o;
  o.max_header_bytes = 2048;
  o.max_body_bytes = 1000;
  TestServer s(o);
  RawResponse big_header =
      Fetch(s.server.port(), "GET", "/hello", "X-Big: " + std::string(4096, 'a') + "\r\n");
  CHECK(big_header.status == 431);
  RawResponse big_body = Fetch(s.server.port(), "POST", "/echo", "", std::string(1001, 'b'));
  CHECK(big_body.status == 413);
  CHECK(big_body.body.find("too large") != std::string::npos);
  RawResponse fits = Fetch(s.server.port(), "POST", "/echo", "", std::string(1000, 'b'));
  CHECK(fits.status == 200);
  CHECK(fits.body.size() == 1000);
}

TEST_CASE("a handler that throws gets a 500 and the server goes on", "[http]") {
  TestServer s;
  TestConnection c(s.server.port());
  REQUIRE(c.Send("GET /boom HTTP/1.1\r\nHost: t\r\n\r\n"));
  RawResponse r = c.Read();
  CHECK(r.status == 500);
  CHECK(r.body.find("internal error") != std::string::npos);
  CHECK(r.body.find("handler bug") == std::string::npos);  // details stay in the log
  CHECK(Get(c, "/hello") == "hello world\n");
}

TEST_CASE("headers with line breaks are dropped and bad statuses become 500", "[http]") {
  TestServer s;
  TestConnection c(s.server.port());
  REQUIRE(c.Send("GET /bad-response HTTP/1.1\r\nHost: t\r\n\r\n"));
  RawResponse r = c.Read();
  CHECK(r.status == 200);
  CHECK(r.headers.count("x-injected") == 0);
  CHECK(r.headers.count("set-cookie") == 0);
  CHECK(r.headers["x-fine"] == "yes");
  REQUIRE(c.Send("GET /bad-response?status HTTP/1.1\r\nHost: t\r\n\r\n"));
  CHECK(c.Read().status == 500);
  CHECK(Get(c, "/hello") == "hello world\n");
}

TEST_CASE("a file region is sent as the body", "[http]") {
  char path[] = "/tmp/shoal-http-file-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::string content;
  for (int i = 0; i < 3 * 1024 * 1024 + 17; ++i) content += char('a' + i % 26);
  REQUIRE(write(fd, content.data(), content.size()) == ssize_t(content.size()));
  close(fd);

  HttpServer server(HttpServerOptions{});
  server.Handle("GET", "/blob", [&](const HttpRequest& r) {
    HttpResponse res;
    uint64_t offset = r.query.count("offset") ? std::stoull(r.query.at("offset")) : 0;
    res.file =
        std::make_shared<HttpFileBody>(open(path, O_RDONLY), offset, content.size() - offset);
    return res;
  });
  REQUIRE(server.Start().ok());
  CHECK(Fetch(server.port(), "GET", "/blob").body == content);
  CHECK(Fetch(server.port(), "GET", "/blob?offset=1000").body == content.substr(1000));
  RawResponse head = Fetch(server.port(), "HEAD", "/blob");
  CHECK(head.headers["content-length"] == std::to_string(content.size()));
  unlink(path);
}

TEST_CASE("32 concurrent clients are all served", "[http]") {
  TestServer s;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 32; ++t) {
    clients.emplace_back([&] {
      TestConnection c(s.server.port());
      for (int i = 0; i < 20; ++i) {
        if (!c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")) return;
        if (c.Read().body == "hello world\n") ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  CHECK(ok == 32 * 20);
}

TEST_CASE("a connection that sends nothing is closed after the header timeout", "[http]") {
  HttpServerOptions o;
  o.header_timeout = std::chrono::milliseconds(200);
  TestServer s(o);
  TestConnection c(s.server.port());
  auto start = std::chrono::steady_clock::now();
  CHECK(c.ServerClosed());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE("a busy port is an IOError naming the address", "[http]") {
  TestServer s;
  HttpServerOptions o;
  o.port = s.server.port();
  HttpServer second(o);
  Status st = second.Start();
  REQUIRE(st.code() == Status::Code::kIOError);
  CHECK(st.message().find("127.0.0.1:" + std::to_string(o.port)) != std::string::npos);
  CHECK(Fetch(s.server.port(), "GET", "/hello").status == 200);
}

TEST_CASE("server options are validated", "[http]") {
  HttpServerOptions o;
  CHECK(o.Validate().ok());
  o.threads = 0;
  CHECK(!o.Validate().ok());
  o = HttpServerOptions{};
  o.address = "localhost:80";
  CHECK(!o.Validate().ok());
  o = HttpServerOptions{};
  o.idle_timeout = std::chrono::milliseconds(0);
  CHECK(!o.Validate().ok());
  HttpServer bad(o);
  CHECK(bad.Start().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("stop closes the listener and is idempotent", "[http]") {
  auto s = std::make_unique<TestServer>();
  uint16_t port = s->server.port();
  TestConnection idle(port);  // an open connection must not block Stop
  s->server.Stop();
  s->server.Stop();
  TestConnection after(port);
  CHECK(!after.connected());
  CHECK(idle.ServerClosed());
}
