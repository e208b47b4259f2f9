// Raw connections to a BitTorrent listen port that stop or crawl partway
// through the handshake, or go quiet after it, and when the other side
// closed each: for tests of what a peer port holds before a peer is known.
#ifndef SHOAL_TESTS_SUPPORT_HANDSHAKE_PROBE_H_
#define SHOAL_TESTS_SUPPORT_HANDSHAKE_PROBE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace shoal::testing {

using ProbeClock = std::chrono::steady_clock;

// The 68-byte handshake for `info_hash` (20 bytes), with the v2 bit set,
// from peer ID "-XX0000-" and 12 times `who` (libtorrent keeps one
// connection per peer ID).
inline std::string Handshake(const std::string& info_hash, char who) {
  std::string h =
      "\x13"
      "BitTorrent protocol";
  std::string reserved(8, '\0');
  reserved[5] = 0x10;         // extension protocol
  reserved[7] = 0x05 | 0x10;  // fast extension, v2
  h += reserved + info_hash + "-XX0000-" + std::string(12, who);
  return h;
}

// One probe: what it sends at once, then `dribble` `chunk` bytes at a time
// every `every`, and when the other side closed it.
struct Probe {
  Probe(std::string name, std::string at_once, std::string dribble = "",
        std::chrono::milliseconds every = std::chrono::milliseconds(0), size_t chunk = 1)
      : name(std::move(name)),
        at_once(std::move(at_once)),
        dribble(std::move(dribble)),
        every(every),
        chunk(chunk) {}
  std::string name;
  std::string at_once;
  std::string dribble;
  std::chrono::milliseconds every;
  size_t chunk;
  int fd = -1;
  size_t dribbled = 0;
  ProbeClock::time_point next_byte;
  double closed_after = -1;  // seconds; -1 while open
};

inline int Connect(uint16_t port) {
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
inline void Run(std::vector<Probe>& probes, uint16_t port, std::chrono::seconds limit) {
  const ProbeClock::time_point start = ProbeClock::now();
  for (Probe& p : probes) {
    p.fd = Connect(port);
    if (!p.at_once.empty())
      REQUIRE(::send(p.fd, p.at_once.data(), p.at_once.size(), MSG_NOSIGNAL) > 0);
    p.next_byte = start + p.every;
  }
  while (ProbeClock::now() - start < limit) {
    bool open = false;
    for (Probe& p : probes) {
      if (p.closed_after >= 0) continue;
      open = true;
      if (p.dribbled < p.dribble.size() && ProbeClock::now() >= p.next_byte) {
        // A failed send means the agent is gone; the read below tells.
        const size_t n = std::min(p.chunk, p.dribble.size() - p.dribbled);
        (void)::send(p.fd, &p.dribble[p.dribbled], n, MSG_NOSIGNAL);
        p.dribbled += n;
        p.next_byte += p.every;
      }
      pollfd pf{p.fd, POLLIN, 0};
      while (::poll(&pf, 1, 0) == 1) {
        char buf[4096];
        ssize_t n = ::recv(p.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) continue;  // the agent's own handshake and bitfield
        if (n == 0 || errno == ECONNRESET || errno == EPIPE) {
          p.closed_after = std::chrono::duration<double>(ProbeClock::now() - start).count();
        }
        break;
      }
    }
    if (!open) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (Probe& p : probes) ::close(p.fd);
}

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_HANDSHAKE_PROBE_H_
