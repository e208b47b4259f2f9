// A deliberately small HTTP/1.1 client on raw sockets, so tests can send
// exactly the bytes they mean (oversized headers, pipelined requests) and see
// exactly what the server sends back.
#ifndef SHOAL_TESTS_SERVICE_HTTP_TEST_CLIENT_H_
#define SHOAL_TESTS_SERVICE_HTTP_TEST_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

namespace shoal {
namespace testing {

struct RawResponse {
  int status = 0;                              // 0 if the connection closed first
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  bool complete = true;  // false if the connection closed mid-body
};

class TestConnection {
 public:
  // Connects from `from` (another loopback address, such as "127.0.0.2",
  // counts as another client) if set.
  explicit TestConnection(uint16_t port, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};  // a hung server fails the test instead of hanging it
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (from) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &local.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~TestConnection() { ::close(fd_); }
  TestConnection(const TestConnection&) = delete;
  TestConnection& operator=(const TestConnection&) = delete;

  bool connected() const { return connected_; }

  // False if the server closed the connection before all was sent.
  bool Send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += size_t(n);
    }
    return true;
  }

  // Reads one response. A response to HEAD has no body, whatever its
  // Content-Length says.
  RawResponse Read(bool head = false) {
    RawResponse r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return r;
    }
    std::string head_text = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    size_t line_end = head_text.find("\r\n");
    std::string status_line = head_text.substr(0, line_end);
    r.status = std::atoi(status_line.substr(9, 3).c_str());
    size_t pos = line_end;
    while (pos != std::string::npos && pos < head_text.size()) {
      size_t next = head_text.find("\r\n", pos + 2);
      std::string line =
          head_text.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      pos = next;
    }
    if (head) return r;
    auto te = r.headers.find("transfer-encoding");
    if (te != r.headers.end() && te->second == "chunked") {
      r.complete = ReadChunked(&r.body);
      return r;
    }
    auto cl = r.headers.find("content-length");
    if (cl != r.headers.end()) {
      size_t length = std::stoul(cl->second);
      while (buf_.size() < length) {
        if (!Fill()) break;
      }
      r.complete = buf_.size() >= length;
      r.body = buf_.substr(0, length);
      buf_.erase(0, std::min(length, buf_.size()));
    }
    return r;
  }

  // True once the server has closed its side (and nothing is buffered).
  bool ServerClosed() { return buf_.empty() && !Fill(); }

  // True if the server closes the connection within `wait` without sending
  // anything more: end of file or a reset, not a timeout.
  bool ReadsEof(std::chrono::milliseconds wait) {
    if (!buf_.empty()) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(wait.count())) != 1) return false;
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  // Decodes a chunked body; false if the connection closed before its end.
  bool ReadChunked(std::string* body) {
    while (true) {
      size_t eol;
      while ((eol = buf_.find("\r\n")) == std::string::npos) {
        if (!Fill()) return false;
      }
      size_t size = std::stoul(buf_.substr(0, eol), nullptr, 16);
      while (buf_.size() < eol + 2 + size + 2) {
        if (!Fill()) return false;
      }
      body->append(buf_, eol + 2, size);
      buf_.erase(0, eol + 2 + size + 2);
      if (size == 0) return true;  // no trailers are sent by the server
    }
  }

  bool Fill() {
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buf_.append(chunk, size_t(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  std::string buf_;
};

// One request on a fresh connection that the client closes afterwards.
inline RawResponse Fetch(uint16_t port, const std::string& method, const std::string& target,
                         const std::string& extra_headers = "", const std::string& body = "") {
  TestConnection c(port);
  std::string req =
      method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n" + extra_headers;
  if (!body.empty()) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  c.Send(req + "\r\n" + body);
  return c.Read(method == "HEAD");
}

}  // namespace testing
}  // namespace shoal

#endif  // SHOAL_TESTS_SERVICE_HTTP_TEST_CLIENT_H_
