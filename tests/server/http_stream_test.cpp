// Streaming bodies: produced piece by piece off the I/O threads, sent
// chunked or with a known length, and cut off cleanly when the producer
// fails.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "server/http_test_client.h"
#include "shoal/server/http_server.h"

using namespace shoal;
using shoal::testing::RawResponse;
using shoal::testing::TestConnection;

namespace {

// A producer of `count` pieces "piece-0 ", "piece-1 ", ...; throws before
// piece `fail_at` if that is set.
std::function<bool(std::string*)> Pieces(int count, int fail_at = -1,
                                         std::atomic<int>* calls = nullptr) {
  auto next = std::make_shared<int>(0);
  return [=](std::string* piece) {
    if (calls) ++*calls;
    if (*next == fail_at) throw std::runtime_error("disk went away");
    if (*next == count) return false;
    *piece = "piece-" + std::to_string((*next)++) + " ";
    return true;
  };
}

std::string Expected(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += "piece-" + std::to_string(i) + " ";
  return out;
}

struct StreamServer {
  StreamServer() : server(HttpServerOptions{}) {
    server.Handle("GET", "/chunked", [this](const HttpRequest&) {
      handler_thread = std::this_thread::get_id();
      HttpResponse r;
      r.stream = [this, produce = Pieces(50)](std::string* piece) {
        producer_thread = std::this_thread::get_id();
        return produce(piece);
      };
      return r;
    });
    server.Handle("GET", "/sized", [this](const HttpRequest&) {
      HttpResponse r;
      r.stream = Pieces(3, -1, &calls);
      r.stream_length = int64_t(Expected(3).size());
      return r;
    });
    server.Handle("GET", "/short", [](const HttpRequest&) {
      HttpResponse r;
      r.stream = Pieces(3);
      r.stream_length = 1000;
      return r;
    });
    server.Handle("GET", "/fails", [](const HttpRequest&) {
      HttpResponse r;
      r.stream = Pieces(10, 4);
      return r;
    });
    REQUIRE(server.Start().ok());
  }
  HttpServer server;
  std::thread::id handler_thread, producer_thread;
  std::atomic<int> calls{0};
};

std::string Request(const std::string& method, const std::string& target) {
  return method + " " + target + " HTTP/1.1\r\nHost: t\r\n\r\n";
}

}  // namespace

TEST_CASE("a stream of unknown length is sent chunked, off the I/O threads", "[http]") {
  StreamServer s;
  TestConnection c(s.server.port());
  REQUIRE(c.Send(Request("GET", "/chunked")));
  RawResponse r = c.Read();
  CHECK(r.status == 200);
  CHECK(r.headers["transfer-encoding"] == "chunked");
  CHECK(r.complete);
  CHECK(r.body == Expected(50));
  CHECK(s.producer_thread != s.handler_thread);
  // The connection stays usable after the last chunk.
  REQUIRE(c.Send(Request("GET", "/chunked")));
  CHECK(c.Read().body == Expected(50));
}

TEST_CASE("a stream of known length has a Content-Length and HEAD skips it", "[http]") {
  StreamServer s;
  TestConnection c(s.server.port());
  REQUIRE(c.Send(Request("HEAD", "/sized")));
  RawResponse head = c.Read(true);
  CHECK(head.headers["content-length"] == std::to_string(Expected(3).size()));
  CHECK(s.calls == 0);
  REQUIRE(c.Send(Request("GET", "/sized")));
  RawResponse r = c.Read();
  CHECK(r.headers.count("transfer-encoding") == 0);
  CHECK(r.body == Expected(3));
}

TEST_CASE("a failing or short stream cuts the connection, not the server", "[http]") {
  StreamServer s;
  TestConnection fails(s.server.port());
  REQUIRE(fails.Send(Request("GET", "/fails")));
  RawResponse r = fails.Read();
  CHECK(r.status == 200);
  CHECK(!r.complete);
  CHECK(r.body == Expected(4));

  TestConnection short_stream(s.server.port());
  REQUIRE(short_stream.Send(Request("GET", "/short")));
  RawResponse cut = short_stream.Read();
  CHECK(!cut.complete);

  TestConnection after(s.server.port());
  REQUIRE(after.Send(Request("GET", "/chunked")));
  CHECK(after.Read().body == Expected(50));
}
