// Raw TCP clients for the tests of the daemons' connection bounds: many
// idle connections from chosen loopback addresses (127.0.0.2 and up count
// as other clients than 127.0.0.1), and a sender of one byte a second.
#ifndef SHOAL_TESTS_INTEGRATION_RAW_CLIENTS_H_
#define SHOAL_TESTS_INTEGRATION_RAW_CLIENTS_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace shoal::testing {

// A connection to 127.0.0.1:`port` from `from` (a loopback address), or -1.
inline int ConnectFrom(const std::string& from, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True once the server has closed `fd` (end of stream or a reset), waiting
// up to `ms`. Whatever it sends first is read and dropped.
inline bool ClosedWithin(int fd, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left < 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left) + 1) <= 0) continue;
    if (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0) return true;
  }
}

// `count` idle connections to `port`, spread evenly over `sources`; each
// says nothing. Closed on destruction.
class IdleFlood {
 public:
  IdleFlood(int port, int count, const std::vector<std::string>& sources) {
    for (int i = 0; i < count; ++i) {
      int fd = ConnectFrom(sources[static_cast<size_t>(i) % sources.size()], port);
      if (fd >= 0) fds_.push_back(fd);
    }
  }
  ~IdleFlood() {
    for (int fd : fds_) ::close(fd);
  }
  IdleFlood(const IdleFlood&) = delete;
  IdleFlood& operator=(const IdleFlood&) = delete;

  int connected() const { return static_cast<int>(fds_.size()); }
  // Connections the server has not closed (it may have refused them).
  int StillOpen() const {
    int open = 0;
    for (int fd : fds_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 0) == 0) ++open;  // nothing to read: no close, no refusal
    }
    return open;
  }

 private:
  std::vector<int> fds_;
};

// Sends `bytes` one a second from `from` until the server closes the
// connection or the bytes run out; held() is how long the connection
// lasted after the first byte.
class ByteASecond {
 public:
  ByteASecond(int port, const std::string& from, std::string bytes)
      : fd_(ConnectFrom(from, port)), bytes_(std::move(bytes)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~ByteASecond() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  ByteASecond(const ByteASecond&) = delete;
  ByteASecond& operator=(const ByteASecond&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Waits for the sender to finish; seconds from its first byte to the
  // server's close, or -1 if the server never closed the connection.
  double Held() {
    if (thread_.joinable()) thread_.join();
    return closed_ ? held_s_ : -1;
  }

 private:
  void Run() {
    if (fd_ < 0) return;
    auto first = std::chrono::steady_clock::now();
    for (size_t i = 0; i < bytes_.size() && !stop_; ++i) {
      if (::send(fd_, &bytes_[i], 1, MSG_NOSIGNAL) != 1 || ClosedWithin(fd_, 1000)) {
        closed_ = true;
        break;
      }
    }
    held_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
  }

  int fd_;
  const std::string bytes_;
  std::atomic<bool> stop_{false};
  bool closed_ = false;
  double held_s_ = 0;
  std::thread thread_;
};

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_INTEGRATION_RAW_CLIENTS_H_
