// How S3Origin retries, against a scripted loopback server: which failures
// are retried, how a broken body resumes, and that silence times out.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "core/fake_http_server.h"
#include "shoal/s3_origin.h"

using namespace shoal;
using shoal_test::FakeHttpServer;

namespace {

std::unique_ptr<S3Origin> OpenFake(const FakeHttpServer& server, uint32_t attempts,
                                   uint32_t io_timeout_ms = 5000) {
  OriginOptions o;
  o.url = "s3://bucket/p";
  o.endpoint = server.endpoint();
  o.access_key = "AKID";
  o.secret_key = "secret";
  o.region = "us-east-1";
  o.max_attempts = attempts;
  o.backoff_base_ms = 10;
  o.backoff_max_ms = 50;
  o.io_timeout_ms = io_timeout_ms;
  o.multipart_threshold = 5 << 20;
  o.part_size = 5 << 20;
  auto r = NewS3Origin(o);
  REQUIRE(r.ok());
  return std::move(r).value();
}

std::string Reply(const std::string& status, const std::string& body,
                  const std::string& extra = "") {
  return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n" + extra + "\r\n" + body;
}

std::string S3Error(const std::string& code) {
  return "<?xml version=\"1.0\"?><Error><Code>" + code + "</Code><Message>m</Message></Error>";
}

}  // namespace

TEST_CASE("S3 retries 503 SlowDown and then succeeds", "[s3][retry]") {
  FakeHttpServer server({Reply("503 Slow Down", S3Error("SlowDown")),
                         Reply("500 Internal Server Error", S3Error("InternalError")),
                         Reply("200 OK", "hello")});
  auto origin = OpenFake(server, 5);
  StringSink sink;
  Status s = origin->Get("k", 0, Origin::kToEnd, sink);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(sink.str() == "hello");
  CHECK(origin->counters().get.requests == 3);
  CHECK(origin->counters().get.retries == 2);
}

TEST_CASE("S3 gives up after max_attempts of 5xx with the last error", "[s3][retry]") {
  FakeHttpServer server({Reply("503 Slow Down", S3Error("SlowDown")),
                         Reply("503 Slow Down", S3Error("SlowDown")), Reply("200 OK", "too late")});
  auto origin = OpenFake(server, 2);
  StringSink sink;
  Status s = origin->Get("k", 0, Origin::kToEnd, sink);
  CHECK(s.code() == Status::Code::kUnavailable);
  CHECK(s.message().find("SlowDown") != std::string::npos);
  CHECK(s.message().find("2 attempts") != std::string::npos);
  CHECK(server.requests().size() == 2);
}

TEST_CASE("S3 does not retry a 403", "[s3][retry]") {
  FakeHttpServer server({Reply("403 Forbidden", S3Error("AccessDenied")), Reply("200 OK", "x")});
  auto origin = OpenFake(server, 5);
  StringSink sink;
  Status s = origin->Get("k", 0, Origin::kToEnd, sink);
  CHECK(s.code() == Status::Code::kPermissionDenied);
  CHECK(s.message().find("AccessDenied") != std::string::npos);
  CHECK(server.requests().size() == 1);
}

TEST_CASE("S3 resumes a body cut short with a Range for the rest", "[s3][retry]") {
  // The first answer promises 10 bytes, sends 5 and hangs up.
  FakeHttpServer server(
      {"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n"
       "Content-Range: bytes 100-109/1000\r\n\r\n01234",
       Reply("206 Partial Content", "56789", "Content-Range: bytes 105-109/1000\r\n")});
  auto origin = OpenFake(server, 3);
  StringSink sink;
  Status s = origin->Get("k", 100, 10, sink);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(sink.str() == "0123456789");
  auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].find("range: bytes=100-109") != std::string::npos);
  CHECK(reqs[1].find("range: bytes=105-109") != std::string::npos);
  CHECK(reqs[0].find("get /bucket/p/k ") == 0);
}

TEST_CASE("S3 does not retry a non-idempotent POST that reached the server", "[s3][retry]") {
  FakeHttpServer server({Reply("500 Internal Server Error", S3Error("InternalError")),
                         Reply("500 Internal Server Error", S3Error("InternalError"))});
  auto origin = OpenFake(server, 5);
  class Zeros : public ByteSource {
   public:
    Result<size_t> Read(uint8_t* buf, size_t cap) override {
      size_t n = std::min<size_t>(cap, left_);
      std::fill(buf, buf + n, 0);
      left_ -= n;
      return n;
    }
    size_t left_ = 6 << 20;
  } zeros;
  Status s = origin->PutStream("big", zeros);  // over the threshold: CreateMultipartUpload
  CHECK(s.code() == Status::Code::kUnavailable);
  auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].find("post /bucket/p/big?uploads=") == 0);
}

TEST_CASE("S3 times out on a server that accepts and never answers", "[s3][retry]") {
  FakeHttpServer server({"", ""});  // two silent connections
  auto origin = OpenFake(server, 2, 300);
  const auto start = std::chrono::steady_clock::now();
  StringSink sink;
  Status s = origin->Get("k", 0, 10, sink);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(s.code() == Status::Code::kUnavailable);
  CHECK(s.message().find("no progress within 300 ms") != std::string::npos);
  CHECK(s.message().find("gave up after 2 attempts") != std::string::npos);
  CHECK(took >= std::chrono::milliseconds(600));
  CHECK(took < std::chrono::seconds(3));
}

TEST_CASE("S3 resumes a whole-object GET with an open-ended Range", "[s3][retry]") {
  FakeHttpServer server({"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcde",
                         Reply("206 Partial Content", "fghij", "Content-Range: bytes 5-9/10\r\n")});
  auto origin = OpenFake(server, 3);
  StringSink sink;
  Status s = origin->Get("k", 0, Origin::kToEnd, sink);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(sink.str() == "abcdefghij");
  auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].find("range:") == std::string::npos);
  CHECK(reqs[1].find("range: bytes=5-\r\n") != std::string::npos);
}

TEST_CASE("S3 skips to the asked range when a server ignores Range", "[s3][retry]") {
  FakeHttpServer server({Reply("200 OK", "0123456789")});
  auto origin = OpenFake(server, 1);
  StringSink sink;
  Status s = origin->Get("k", 3, 4, sink);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(sink.str() == "3456");
}

TEST_CASE("S3 reuses one keep-alive connection for sequential requests", "[s3][pool]") {
  std::vector<std::string> replies(5, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nsame");
  FakeHttpServer server(replies, /*keep_alive=*/true);
  auto origin = OpenFake(server, 1);
  for (int i = 0; i < 5; ++i) {
    StringSink sink;
    REQUIRE(origin->Get("k", 0, Origin::kToEnd, sink).ok());
    CHECK(sink.str() == "same");
  }
  CHECK(server.connections() == 1);
}

TEST_CASE("S3 does not reuse a connection the server closed while idle", "[s3][pool]") {
  // No "Connection: close": the client pools the connection, the server
  // hangs up anyway. The next request must not fail or need a retry.
  FakeHttpServer server({"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na",
                         "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"});
  auto origin = OpenFake(server, 1);
  StringSink first, second;
  REQUIRE(origin->Get("k", 0, Origin::kToEnd, first).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the FIN arrive
  Status s = origin->Get("k", 0, Origin::kToEnd, second);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(second.str() == "b");
  CHECK(server.connections() == 2);
  CHECK(origin->counters().get.retries == 0);
}

TEST_CASE("S3 reports a refusal sent before the body was read", "[s3][retry]") {
  // The server answers 403 after the request head and hangs up while the
  // client is still sending 20 MiB: the client must report the 403, not a
  // reset, and must not retry it.
  FakeHttpServer server({Reply("403 Forbidden", S3Error("AccessDenied")),
                         Reply("403 Forbidden", S3Error("AccessDenied"))});
  auto origin = OpenFake(server, 3);
  const std::string big(20 << 20, 'b');
  Status s = origin->Put("k", reinterpret_cast<const uint8_t*>(big.data()), big.size());
  INFO(s.ToString());
  CHECK(s.code() == Status::Code::kPermissionDenied);
  CHECK(s.message().find("AccessDenied") != std::string::npos);
  CHECK(server.requests().size() == 1);
}
