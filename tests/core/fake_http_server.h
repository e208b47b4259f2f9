// A loopback HTTP server for client tests that need answers no real S3
// server gives on demand: 503s, bodies cut short, or silence. It answers
// each request with the next scripted raw response, then closes the
// connection, or with keep_alive waits for the next request on it; an empty
// script entry means "read the request, never answer". One connection is
// served at a time.
#ifndef SHOAL_TESTS_CORE_FAKE_HTTP_SERVER_H_
#define SHOAL_TESTS_CORE_FAKE_HTTP_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shoal_test {

class FakeHttpServer {
 public:
  explicit FakeHttpServer(std::vector<std::string> script, bool keep_alive = false)
      : keep_alive_(keep_alive), script_(script.begin(), script.end()) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeHttpServer() {
    stop_ = true;
    thread_.join();
    for (int fd : silent_) ::close(fd);
    ::close(listen_fd_);
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Connections accepted so far.
  int connections() const { return connections_; }
  // Request heads received so far, lower-cased.
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ++connections_;
      if (ServeConnection(fd)) ::close(fd);
    }
  }

  // Answers requests on `fd`; false if it must stay open (a silent answer).
  bool ServeConnection(int fd) {
    for (;;) {
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        pollfd q{fd, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) return true;
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) return true;
        head.append(buf, static_cast<size_t>(n));
      }
      for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string reply;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(head);
        if (!script_.empty()) {
          reply = script_.front();
          script_.pop_front();
        }
      }
      if (reply.empty()) {
        silent_.push_back(fd);  // keep it open and say nothing
        return false;
      }
      ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      if (!keep_alive_ || stop_) return true;
    }
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  const bool keep_alive_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
  std::mutex mu_;
  std::deque<std::string> script_;     // protected by mu_
  std::vector<std::string> requests_;  // protected by mu_
  std::vector<int> silent_;            // server thread only
};

}  // namespace shoal_test

#endif  // SHOAL_TESTS_CORE_FAKE_HTTP_SERVER_H_
