// What the tracker's RPC port does with connections that never present a
// token, messages that claim too much, and messages that stall half-sent:
// raw sockets and real Cap'n Proto clients against a real shoal-tracker.
#include <arpa/inet.h>
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "shoal/proto/tracker.capnp.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

using namespace shoal;
using namespace shoal::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// A raw TCP connection to 127.0.0.1:`port`, closed on destruction.
struct RawSocket {
  int fd = -1;
  // From `from` (another loopback address counts as another client) if set.
  explicit RawSocket(int port, const char* from = nullptr) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (from) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &local.sin_addr);
      REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  ~RawSocket() { ::close(fd); }

  // Sends `size` bytes in 1 MiB writes; returns how many went out before
  // the peer closed or the send timed out.
  size_t Send(const void* data, size_t size) {
    size_t sent = 0;
    while (sent < size) {
      ssize_t n = ::send(fd, static_cast<const char*>(data) + sent,
                         std::min<size_t>(size - sent, 1 << 20), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    return sent;
  }
  size_t SendZeros(size_t size) {
    std::string zeros(size, '\0');
    return Send(zeros.data(), zeros.size());
  }
  // True once the tracker has closed the connection (end of stream or a
  // reset), waiting up to `ms`. Whatever it says first is read and dropped.
  bool ClosedWithin(int ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(ms);
    char buf[4096];
    while (Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      if (::poll(&p, 1, std::max(left, 1)) <= 0) continue;
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
    return false;
  }
};

// A Cap'n Proto frame header: one segment of `words` 8-byte words.
std::string OneSegmentHeader(uint32_t words) {
  uint32_t header[2] = {0, words};  // segment count minus one, segment size (little-endian hosts)
  return std::string(reinterpret_cast<const char*>(header), sizeof(header));
}

// Resident memory of process `pid`, in bytes, from /proc/PID/status.
uint64_t RssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// An authenticated Cap'n Proto session, as the CLI and agents hold one.
// Sessions of one test share its thread's `io`.
struct TokenClient {
  kj::AsyncIoContext& io;
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyClient> rpc;
  proto::Registry::Client registry = nullptr;

  TokenClient(kj::AsyncIoContext& io_context, const std::string& address, const std::string& token)
      : io(io_context) {
    stream = io.provider->getNetwork()
                 .parseAddress(address)
                 .wait(io.waitScope)
                 ->connect()
                 .wait(io.waitScope);
    rpc = kj::heap<capnp::TwoPartyClient>(*stream);
    auto req = rpc->bootstrap().castAs<proto::Gateway>().authenticateRequest();
    req.setToken(token);
    registry = req.send().wait(io.waitScope).getRegistry();
  }
  std::string Whoami() {
    return registry.whoamiRequest().send().wait(io.waitScope).getIdentity().getSubject().cStr();
  }
  // True if the tracker drops the connection within `ms`.
  bool DisconnectedWithin(int ms) {
    return rpc->onDisconnect()
        .then([] { return true; })
        .exclusiveJoin(
            io.provider->getTimer().afterDelay(ms * kj::MILLISECONDS).then([] { return false; }))
        .wait(io.waitScope);
  }
};

const std::string kRefused = "shoal_tracker_rpc_connections_refused_total";

}  // namespace

TEST_CASE("a frame header claiming 64 MiB is refused before the tracker holds the memory",
          "[tracker][rpc][hostile]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker", {"--origin", "file://" + (tmp / "origin")});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  uint64_t rss_before = RssBytes(tracker.pid());

  // Three connections each claim one segment just under Cap'n Proto's
  // 8 Mi-word limit and start sending its body, as the probe did.
  std::vector<std::unique_ptr<RawSocket>> conns;
  size_t body_sent = 0;
  auto start = Clock::now();
  for (int i = 0; i < 3; ++i) {
    conns.push_back(std::make_unique<RawSocket>(port));
    std::string header = OneSegmentHeader((8 << 20) - 2);
    conns.back()->Send(header.data(), header.size());
    body_sent += conns.back()->SendZeros(16 << 20);
  }
  for (auto& c : conns) CHECK(c->ClosedWithin(3000));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  uint64_t rss_after = RssBytes(tracker.pid());
  INFO("RSS before " << rss_before / 1024 << " KiB, after " << rss_after / 1024
                     << " KiB; body bytes accepted " << body_sent << "; closed in " << took
                     << " ms");
  CHECK(rss_after < rss_before + (16 << 20));
  CHECK(body_sent < (24 << 20));  // 48 MiB offered
  CHECK(tracker.Metric(kRefused + "{reason=\"message_too_large\"}") == 3);
  CHECK(tracker.Metric("shoal_tracker_rpc_unauthenticated_connections") == 0);
}

TEST_CASE(
    "a connection that never authenticates is closed at its deadline, and only so many may wait",
    "[tracker][rpc][hostile]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"), "--rpc-auth-timeout", "1s",
                          "--rpc-max-unauthenticated", "3"});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  auto io = kj::setupAsyncIo();
  TokenClient agent(io, tracker.rpc_address(), tracker.MintToken("*", "read", "agent"));

  RawSocket a(port), b(port), c(port);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(tracker.Metric("shoal_tracker_rpc_unauthenticated_connections") == 3);
  RawSocket extra(port);
  CHECK(extra.ClosedWithin(500));
  CHECK(tracker.Metric(kRefused + "{reason=\"too_many_unauthenticated\"}") == 1);

  // The three silent ones go at their deadline; the authenticated one,
  // idle as long, stays.
  CHECK(a.ClosedWithin(3000));
  CHECK(b.ClosedWithin(500));
  CHECK(c.ClosedWithin(500));
  CHECK(tracker.Metric(kRefused + "{reason=\"auth_timeout\"}") == 3);
  CHECK(tracker.Metric("shoal_tracker_rpc_unauthenticated_connections") == 0);
  CHECK(agent.Whoami() == "agent");
}

TEST_CASE("one host may hold only so many RPC connections, and all hosts only so many together",
          "[tracker][rpc][hostile][limits]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"),
                          "--rpc-max-connections-per-client", "2", "--rpc-max-connections", "4"});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  auto io = kj::setupAsyncIo();
  // An authenticated session counts like any other connection.
  TokenClient agent(io, tracker.rpc_address(), tracker.MintToken("*", "read", "agent"));
  RawSocket second(port);
  RawSocket third(port);
  CHECK(third.ClosedWithin(1000));
  CHECK(!second.ClosedWithin(200));
  CHECK(tracker.Metric(kRefused + "{reason=\"too_many_from_client\"}") == 1);

  // Other hosts get in, up to the total.
  RawSocket b1(port, "127.0.0.2"), c1(port, "127.0.0.3");
  CHECK(!b1.ClosedWithin(200));
  CHECK(!c1.ClosedWithin(10));
  CHECK(tracker.Metric("shoal_tracker_rpc_connections") == 4);
  RawSocket d1(port, "127.0.0.4");
  CHECK(d1.ClosedWithin(1000));
  CHECK(tracker.Metric(kRefused + "{reason=\"too_many_connections\"}") == 1);
  CHECK(agent.Whoami() == "agent");

  // A connection that goes gives its place back.
  ::shutdown(c1.fd, SHUT_RDWR);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  RawSocket d2(port, "127.0.0.4");
  CHECK(!d2.ClosedWithin(300));
}

TEST_CASE("out of descriptors, the RPC port backs off, and serves again once it has them",
          "[tracker][rpc][hostile][limits]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  // Two loops share the listening socket, and each backs off on its own.
  constexpr int kLoops = 2;
  TrackerProcess tracker(tmp / "tracker", {"--origin", "file://" + (tmp / "origin"),
                                           "--rpc-threads", std::to_string(kLoops)});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  const std::string pid = std::to_string(tracker.pid());
  // The next descriptor the tracker would get is its lowest free number:
  // a soft limit there makes every accept fail.
  std::set<int> used;
  for (const auto& e : fs::directory_iterator("/proc/" + pid + "/fd"))
    used.insert(std::stoi(e.path().filename().string()));
  int lowest_free = 0;
  while (used.count(lowest_free)) ++lowest_free;
  rlimit files{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &files) == 0);
  const std::string hard = std::to_string(files.rlim_max);
  REQUIRE(RunProcess({"/usr/bin/prlimit", "--pid", pid,
                      "--nofile=" + std::to_string(lowest_free) + ":" + hard})
              .exit_code == 0);
  {
    RawSocket a(port), b(port);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    REQUIRE(
        RunProcess({"/usr/bin/prlimit", "--pid", pid, "--nofile=" + hard + ":" + hard}).exit_code ==
        0);
  }
  auto io = kj::setupAsyncIo();
  TokenClient agent(io, tracker.rpc_address(), tracker.MintToken("*", "read", "agent"));
  CHECK(agent.Whoami() == "agent");
  double errors = tracker.Metric("shoal_tracker_rpc_accept_errors_total");
  CHECK(errors >= 1);
  CHECK(errors <= 12 * kLoops);  // one try per 100 ms on each loop, not a spin
}

TEST_CASE("a message left half-sent is closed at its deadline, before and after authentication",
          "[tracker][rpc][hostile]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"), "--rpc-auth-timeout", "8s",
                          "--rpc-message-timeout", "1s"});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  std::string token = tracker.MintToken("team-a", "read", "pod");

  // Unauthenticated: half a header, then silence. Closed long before the
  // 8 s deadline to authenticate.
  RawSocket raw(port);
  std::string header = OneSegmentHeader(16);
  raw.Send(header.data(), 5);
  CHECK(raw.ClosedWithin(4000));

  // Authenticated: idling between messages is fine...
  auto io = kj::setupAsyncIo();
  TokenClient idle(io, tracker.rpc_address(), token);
  TokenClient stalled(io, tracker.rpc_address(), token);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  CHECK(idle.Whoami() == "pod");
  // ...but a message must not stop halfway.
  stalled.stream->write(header.data(), header.size()).wait(stalled.io.waitScope);
  stalled.stream->write(header.data(), 8).wait(stalled.io.waitScope);  // 8 of 128 body bytes
  CHECK(stalled.DisconnectedWithin(4000));
  CHECK(tracker.Metric(kRefused + "{reason=\"message_timeout\"}") == 2);
  CHECK(idle.Whoami() == "pod");
}

TEST_CASE("an authenticated client still publishes and resolves a manifest larger than 64 KiB",
          "[tracker][rpc]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"), "--rpc-auth-timeout", "2s",
                          "--rpc-message-timeout", "10s"});
  tracker.Start();
  // 40 MiB in 16 KiB pieces: a 2560-hash piece layer, 80 KiB in the manifest.
  WriteRandomFile(tmp / "ckpt/w.bin", 40 << 20, 7);
  std::vector<std::string> env = {"SHOAL_TRACKER=" + tracker.rpc_address(),
                                  "SHOAL_TOKEN=" + tracker.MintToken("team-a", "write", "trainer"),
                                  "SHOAL_ORIGIN=file://" + (tmp / "origin")};
  auto pub = RunProcess({CliBinary(), "publish", tmp / "ckpt", "--name", "team-a/big", "--tag",
                         "latest", "--piece-size", "16384", "--no-seed"},
                        env);
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);
  auto resolved = RunProcess({CliBinary(), "inspect", "team-a/big:latest", "--json"}, env);
  INFO(resolved.err);
  CHECK(resolved.exit_code == 0);
  CHECK_THAT(resolved.out, Catch::Contains("w.bin"));
  CHECK(tracker.Metric(kRefused + "{reason=\"message_too_large\"}") == 0);
}

TEST_CASE("idle connections from a few addresses cannot keep a newcomer out of the RPC port",
          "[tracker][rpc][hostile][limits]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  // The defaults, with a deadline long enough that no idle connection goes
  // on its own while the test runs.
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"), "--rpc-auth-timeout", "60s"});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  const std::string token = tracker.MintToken("*", "read", "reader");

  // 100 idle connections from each of three addresses: each address holds
  // only its share of the tokenless pool.
  std::vector<std::unique_ptr<RawSocket>> idle;
  for (const char* from : {"127.0.0.2", "127.0.0.3", "127.0.0.4"}) {
    for (int i = 0; i < 100; ++i) idle.push_back(std::make_unique<RawSocket>(port, from));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int open = 0;
  for (auto& s : idle) open += s->ClosedWithin(20) ? 0 : 1;
  INFO(open << " of 300 idle connections still open");
  CHECK(open == 3 * 32);  // --rpc-max-unauthenticated-per-client's default
  CHECK(tracker.Metric(kRefused + "{reason=\"too_many_unauthenticated_from_client\"}") == 300 - 96);

  // The CLI, from another address, is served at once.
  auto ls = RunProcess({CliBinary(), "ls"},
                       {"SHOAL_TRACKER=" + tracker.rpc_address(), "SHOAL_TOKEN=" + token});
  INFO(ls.err);
  CHECK(ls.exit_code == 0);
}

TEST_CASE("once the tokenless pool is full, a newcomer takes the busiest address's oldest place",
          "[tracker][rpc][hostile][limits]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker", {"--origin", "file://" + (tmp / "origin"),
                                           "--rpc-auth-timeout", "60s", "--rpc-max-unauthenticated",
                                           "12", "--rpc-max-unauthenticated-per-client", "8"});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  // 127.0.0.2 takes 8, 127.0.0.3 the other 4: the pool is full.
  std::vector<std::unique_ptr<RawSocket>> busy, quiet;
  for (int i = 0; i < 8; ++i) busy.push_back(std::make_unique<RawSocket>(port, "127.0.0.2"));
  for (int i = 0; i < 4; ++i) quiet.push_back(std::make_unique<RawSocket>(port, "127.0.0.3"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(tracker.Metric("shoal_tracker_rpc_unauthenticated_connections") == 12);

  // An agent from 127.0.0.1 gets in, and authenticates: the oldest of
  // 127.0.0.2's eight was closed for it, and no one else.
  auto io = kj::setupAsyncIo();
  TokenClient agent(io, tracker.rpc_address(), tracker.MintToken("*", "read", "agent"));
  CHECK(agent.Whoami() == "agent");
  CHECK(busy[0]->ClosedWithin(1000));
  for (size_t i = 1; i < busy.size(); ++i) CHECK(!busy[i]->ClosedWithin(1));
  for (auto& s : quiet) CHECK(!s->ClosedWithin(1));
  CHECK(tracker.Metric(kRefused + "{reason=\"evicted_unauthenticated\"}") == 1);

  // Among equals nothing is taken: 127.0.0.2 (7) and 127.0.0.3 (now 4,
  // asking a fifth while the pool is full again) are not swapped for each
  // other beyond one apart.
  RawSocket refill(port, "127.0.0.3");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(!refill.ClosedWithin(1));  // the pool had the agent's place free
  RawSocket one_more(port, "127.0.0.3");
  CHECK(!one_more.ClosedWithin(300));  // 127.0.0.2 holds 7 > 5 + 1: its oldest went
  CHECK(busy[1]->ClosedWithin(1000));
  RawSocket equal(port, "127.0.0.3");
  CHECK(equal.ClosedWithin(1000));  // 127.0.0.2 holds 6, 127.0.0.3 would hold 7: refused
  CHECK(tracker.Metric(kRefused + "{reason=\"too_many_unauthenticated\"}") == 1);
}

TEST_CASE("a refused RPC client is told why, not that the tracker may be down",
          "[tracker][rpc][hostile][limits]") {
  TempDir tmp;
  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"), "--rpc-auth-timeout", "60s",
                          "--rpc-max-unauthenticated-per-client", "2"});
  tracker.Start();
  int port = std::stoi(tracker.rpc_address().substr(tracker.rpc_address().rfind(':') + 1));
  RawSocket a(port), b(port);  // both from 127.0.0.1, as the CLI will be
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto ls = RunProcess({CliBinary(), "ls"}, {"SHOAL_TRACKER=" + tracker.rpc_address(),
                                             "SHOAL_TOKEN=" + tracker.MintToken("*", "read", "r")});
  INFO(ls.err);
  CHECK(ls.exit_code != 0);
  CHECK(ls.err.find("the tracker refused this connection") != std::string::npos);
  CHECK(ls.err.find("--rpc-max-unauthenticated-per-client") != std::string::npos);
  CHECK(ls.err.find("is it running") == std::string::npos);
  CHECK(std::count(ls.err.begin(), ls.err.end(), '\n') == 1);
}
