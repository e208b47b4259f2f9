// What crosses the wire between two TLS peers: pieces flow both ways on one
// connection, byte-identical, through a relay that records every byte, and
// no run of the file's bytes appears in what it recorded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>

#include "p2p/p2p_test_support.h"

namespace shoal {
namespace testing {
namespace {

// A TCP relay on 127.0.0.1 to `target_port` that keeps a copy of each
// direction of every connection it carries.
class RecordingRelay {
 public:
  explicit RecordingRelay(uint16_t target_port) : target_port_(target_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = Loopback(0);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener_, 8) != 0) {
      throw std::runtime_error("relay: cannot listen");
    }
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~RecordingRelay() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }

  uint16_t port() const { return port_; }
  // Bytes from the connecting peer, and from the target.
  std::string Upstream() {
    std::lock_guard<std::mutex> l(mu_);
    return up_;
  }
  std::string Downstream() {
    std::lock_guard<std::mutex> l(mu_);
    return down_;
  }

 private:
  static sockaddr_in Loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }

  // One connection at a time is enough here: the peers hold one.
  void Run() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int in = ::accept(listener_, nullptr, nullptr);
      if (in < 0) continue;
      int out = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in t = Loopback(target_port_);
      if (::connect(out, reinterpret_cast<sockaddr*>(&t), sizeof t) != 0) {
        ::close(in);
        ::close(out);
        continue;
      }
      Pump(in, out);
      ::close(in);
      ::close(out);
    }
  }

  void Pump(int in, int out) {
    std::vector<char> buf(256 * 1024);
    while (!stop_) {
      pollfd p[2] = {{in, POLLIN, 0}, {out, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = ::read(p[i].fd, buf.data(), buf.size());
        if (n <= 0) return;
        {
          std::lock_guard<std::mutex> l(mu_);
          (i == 0 ? up_ : down_).append(buf.data(), static_cast<size_t>(n));
        }
        const int to = i == 0 ? out : in;
        for (ssize_t sent = 0; sent < n;) {
          ssize_t w = ::write(to, buf.data() + sent, static_cast<size_t>(n - sent));
          if (w <= 0) return;
          sent += w;
        }
      }
    }
  }

  uint16_t target_port_;
  uint16_t port_ = 0;
  int listener_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string up_, down_;
  std::thread thread_;
};

// Whether any 32-byte run of `data`, sampled every 256 KiB (a record in
// clear would carry 16 KiB of it), occurs in `wire`.
bool CarriesPlaintext(const std::vector<uint8_t>& data, const std::string& wire) {
  for (size_t off = 0; off + 32 <= data.size(); off += 256 * 1024) {
    std::string run(reinterpret_cast<const char*>(data.data()) + off, 32);
    if (wire.find(run) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("TLS peers trade pieces both ways on one connection, and the wire carries none in clear",
          "[p2p][tls]") {
  auto ca = PeerCa::Create("cluster CA", NowMs(), 24 * kHour);
  REQUIRE(ca.ok());
  // 24 MiB and a tail in 4 MiB pieces: each side starts with half and
  // sends the other half, in writes far larger than one TLS record.
  TestFile f = MakeFile(43, (24u << 20) + 12345, 4u << 20);
  Agent a(AwaitingOptions()), b(AwaitingOptions());
  REQUIRE(a.engine->SetPeerIdentity(IdentityFor(**ca, **ca, "a")).ok());
  REQUIRE(b.engine->SetPeerIdentity(IdentityFor(**ca, **ca, "b")).ok());
  a.Seed(f, 0, 4);
  b.Seed(f, 4);
  FileTorrentId id = a.Add(f);
  REQUIRE(b.Add(f) == id);

  RecordingRelay relay(a.port());
  REQUIRE(b.engine->ConnectPeer(id, "127.0.0.1", relay.port()).ok());
  REQUIRE(a.WaitComplete(id, std::chrono::seconds(60)));
  REQUIRE(b.WaitComplete(id, std::chrono::seconds(60)));
  CHECK(a.Materialized(f) == f.data);
  CHECK(b.Materialized(f) == f.data);
  CHECK(a.engine->Stats().hash_failures == 0);
  CHECK(b.engine->Stats().hash_failures == 0);

  // Each direction carried its half through the relay, encrypted.
  const std::string up = relay.Upstream(), down = relay.Downstream();
  INFO("relay carried " << up.size() << " bytes from b, " << down.size() << " from a");
  CHECK(up.size() >= f.data.size() - (16u << 20));
  CHECK(down.size() >= (16u << 20));
  CHECK_FALSE(CarriesPlaintext(f.data, up));
  CHECK_FALSE(CarriesPlaintext(f.data, down));
}

TEST_CASE("the wire check finds the pieces plain peers send", "[p2p][tls]") {
  TestFile f = MakeFile(44, 4u << 20, 1u << 20);
  Agent a, b;
  a.Seed(f);
  FileTorrentId id = a.Add(f);
  REQUIRE(b.Add(f) == id);
  RecordingRelay relay(a.port());
  REQUIRE(b.engine->ConnectPeer(id, "127.0.0.1", relay.port()).ok());
  REQUIRE(b.WaitComplete(id));
  CHECK(CarriesPlaintext(f.data, relay.Downstream()));
}

}  // namespace testing
}  // namespace shoal
