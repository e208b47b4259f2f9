// What the peer port does with connections that never become peers: a real
// engine (the agent's libtorrent session, with the agent's settings) seeding
// one file on 127.0.0.1, and raw sockets that stop or crawl partway through
// the BitTorrent handshake, or go quiet right after it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>

#include "p2p_test_support.h"

namespace shoal {
namespace testing {
namespace {

using Clock = std::chrono::steady_clock;

// The 68-byte handshake for `info_hash` (20 bytes), with the v2 bit set,
// from peer ID "-XX0000-" and 12 times `who` (libtorrent keeps one
// connection per peer ID).
std::string Handshake(const std::string& info_hash, char who) {
  std::string h = "\x13" "BitTorrent protocol";
  std::string reserved(8, '\0');
  reserved[5] = 0x10;  // extension protocol
  reserved[7] = 0x05 | 0x10;  // fast extension, v2
  h += reserved + info_hash + "-XX0000-" + std::string(12, who);
  return h;
}

// One probe: what it sends at once, then what it sends one byte at a time
// every `every`, and when the agent closed it.
struct Probe {
  Probe(std::string name, std::string at_once, std::string dribble = "",
        std::chrono::milliseconds every = std::chrono::milliseconds(0))
      : name(std::move(name)), at_once(std::move(at_once)), dribble(std::move(dribble)),
        every(every) {}
  std::string name;
  std::string at_once;
  std::string dribble;
  std::chrono::milliseconds every;
  int fd = -1;
  size_t dribbled = 0;
  Clock::time_point next_byte;
  double closed_after = -1;  // seconds; -1 while open
};

int Connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  return fd;
}

// Runs the probes side by side until each is closed or `limit` passes;
// fills closed_after.
void Run(std::vector<Probe>& probes, uint16_t port, std::chrono::seconds limit) {
  const Clock::time_point start = Clock::now();
  for (Probe& p : probes) {
    p.fd = Connect(port);
    if (!p.at_once.empty()) REQUIRE(::send(p.fd, p.at_once.data(), p.at_once.size(), MSG_NOSIGNAL) > 0);
    p.next_byte = start + p.every;
  }
  while (Clock::now() - start < limit) {
    bool open = false;
    for (Probe& p : probes) {
      if (p.closed_after >= 0) continue;
      open = true;
      if (p.dribbled < p.dribble.size() && Clock::now() >= p.next_byte) {
        // A failed send means the agent is gone; the read below tells.
        (void)::send(p.fd, &p.dribble[p.dribbled++], 1, MSG_NOSIGNAL);
        p.next_byte += p.every;
      }
      pollfd pf{p.fd, POLLIN, 0};
      while (::poll(&pf, 1, 0) == 1) {
        char buf[4096];
        ssize_t n = ::recv(p.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) continue;  // the agent's own handshake and bitfield
        if (n == 0 || errno == ECONNRESET || errno == EPIPE) {
          p.closed_after = std::chrono::duration<double>(Clock::now() - start).count();
        }
        break;
      }
    }
    if (!open) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (Probe& p : probes) ::close(p.fd);
}

}  // namespace

TEST_CASE("half-sent, unknown, silent and crawling handshakes are closed within 15 s",
          "[p2p][peer-port]") {
  TestFile f = MakeFile(7, 2u << 20, 1u << 20);
  Agent agent;
  agent.Seed(f);
  FileTorrentId id = agent.Add(f);
  const std::string served(reinterpret_cast<const char*>(id.data()), 20);  // v2, truncated
  const std::string unknown(20, '\x42');
  const std::chrono::milliseconds slow(2000);
  std::vector<Probe> probes = {
      {"first 20 bytes, then silence", Handshake(served, 'a').substr(0, 20)},
      {"up to half the info-hash, then silence", Handshake(served, 'b').substr(0, 38)},
      {"a full handshake for a torrent not served", Handshake(unknown, 'c')},
      {"a full handshake, then silence", Handshake(served, 'd')},
      {"the handshake one byte every 2 s", "", Handshake(served, 'e'), slow},
      {"up to the info-hash, then the peer id one byte every 2 s",
       Handshake(served, 'f').substr(0, 48), Handshake(served, 'f').substr(48), slow},
      // After a whole handshake, a message that never ends: a 16 KiB
      // piece's length, then its bytes one every 2 s.
      {"a full handshake, then a message one byte every 2 s", Handshake(served, 'g'),
       std::string("\x00\x00\x40\x09\x07", 5) + std::string(64, '\x00'), slow},
  };
  Run(probes, agent.port(), std::chrono::seconds(40));
  for (const Probe& p : probes) {
    INFO(p.name << ": closed after " << p.closed_after << " s");
    CHECK(p.closed_after >= 0);
    CHECK(p.closed_after <= 15.0);
  }
  // The two that crawled past libtorrent's own timeouts were closed by the
  // engine's deadlines, and counted.
  CHECK(agent.engine->Stats().peers_stalled >= 2);
}

TEST_CASE("a real peer still downloads through the same port", "[p2p][peer-port]") {
  TestFile f = MakeFile(8, (2u << 20) + 4321, 256 * 1024);
  Agent seeder, leecher;
  seeder.Seed(f);
  FileTorrentId id = seeder.Add(f);
  REQUIRE(leecher.Add(f) == id);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.Materialized(f) == f.data);
}

}  // namespace testing
}  // namespace shoal
