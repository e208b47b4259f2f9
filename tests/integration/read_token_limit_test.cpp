// How many reads one token may have in flight at an agent: readers that
// hold their reads open (they stop reading the body) use up the token's
// slots, the next read with it is refused at once (429 on the plain API,
// 503 SlowDown on S3), other tokens read on, and a slot comes back when its
// read ends. A real tracker and agent, raw sockets and curl, on 127.0.0.1.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "integration/raw_clients.h"
#include "shoal/s3_signer.h"
#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

constexpr size_t kBigFile = 24 << 20;  // more than the socket buffers on both sides hold

// A GET of `url_path` with `token` whose reader reads the status line and
// then stops reading: the agent's send stalls, and the read stays in flight.
struct StalledReader {
  int fd;
  std::string head;
  StalledReader(int port, const std::string& url_path, const std::string& token) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    std::string req =
        "GET " + url_path + " HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token + "\r\n\r\n";
    REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
    char buf[64] = {};
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssize_t n = ::recv(fd, buf, 12, MSG_WAITALL);
    head.assign(buf, n > 0 ? static_cast<size_t>(n) : 0);
  }
  ~StalledReader() { ::close(fd); }
};

// curl arguments for an S3 GET of /team-a/`key` on `port`, signed with
// `token` as both keys.
std::vector<std::string> SignedGet(int port, const std::string& token, const std::string& key) {
  const std::string host = "127.0.0.1:" + std::to_string(port);
  shoal::SigV4Signer signer({token, token, ""}, "us-east-1");
  shoal::SignableRequest s;
  s.method = "GET";
  s.path = "/team-a/" + key;
  s.headers = {{"host", host}};
  s.payload_sha256 = shoal::kEmptyPayloadSha256;
  std::vector<std::string> args;
  for (const auto& [k, v] : signer.SignHeaders(s, std::time(nullptr))) {
    args.push_back("-H");
    args.push_back(k + ": " + v);
  }
  args.push_back("http://" + host + s.path);
  return args;
}

}  // namespace

TEST_CASE("a token may have only so many reads in flight, and others read on",
          "[agent][read][limits]") {
  TestCluster c;
  c.AddAgent({"--origin", "file://" + c.origin, "--read-max-per-token", "2"});
  std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/big.bin", kBigFile, 5);
  WriteRandomFile(ckpt + "/small.json", 700, 6);
  c.PublishOk(ckpt, "team-a/m", 0);
  const int port = c.agents[0]->http_port();
  const std::string big = "/v1/models/team-a/m:latest/files/big.bin";

  auto first = std::make_unique<StalledReader>(port, big, c.reader);
  StalledReader second(port, big, c.reader);
  REQUIRE(first->head == "HTTP/1.1 200");
  REQUIRE(second.head == "HTTP/1.1 200");

  CurlAnswer plain =
      c.Curl({"-H", "Authorization: Bearer " + c.reader, c.FileUrl(0, "m", "small.json")});
  CHECK(plain.status == 429);
  CHECK(plain.headers["retry-after"] == "1");
  CHECK(plain.body.find("2 reads in flight") != std::string::npos);
  CurlAnswer s3 = c.Curl(SignedGet(port, c.reader, "m/latest/small.json"));
  CHECK(s3.status == 503);
  CHECK(s3.body.find("<Code>SlowDown</Code>") != std::string::npos);
  CHECK(c.agents[0]->Metric("shoal_agent_read_throttled_total{api=\"plain\"}") == 1);
  CHECK(c.agents[0]->Metric("shoal_agent_read_throttled_total{api=\"s3\"}") == 1);

  // Another token has slots of its own.
  CurlAnswer other =
      c.Curl({"-H", "Authorization: Bearer " + c.agent_token, c.FileUrl(0, "m", "small.json")});
  CHECK(other.status == 200);
  CHECK(other.body == Slurp(ckpt + "/small.json"));

  // A read that ends gives its slot back.
  first.reset();
  CurlAnswer again;
  for (int i = 0; i < 50; ++i) {
    again = c.Curl({"-H", "Authorization: Bearer " + c.reader, c.FileUrl(0, "m", "small.json")});
    if (again.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(again.status == 200);
  CHECK(again.body == Slurp(ckpt + "/small.json"));
}
