// The server on a unix socket: pods on the node reach it through a mounted
// path instead of a port.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "shoal/server/http_server.h"

using namespace shoal;

namespace {

// Sends `request` over the unix socket at `path` and returns everything the
// server sends until it closes.
std::string Exchange(const std::string& path, const std::string& request) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size()));
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, size_t(n));
  ::close(fd);
  return out;
}

}  // namespace

TEST_CASE("the server answers on a unix socket, file bodies included, and removes it on stop",
          "[http]") {
  char dir[] = "/tmp/shoal-http-unix-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/http.sock";
  const std::string file = std::string(dir) + "/blob";
  std::string content(3 * 1024 * 1024 + 7, 'z');
  {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT, 0644);
    REQUIRE(::write(fd, content.data(), content.size()) == ssize_t(content.size()));
    ::close(fd);
  }
  {
    // A stale socket file from an earlier run does not stop a new one.
    int stale = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    REQUIRE(::bind(stale, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    ::close(stale);
  }
  HttpServerOptions o;
  o.unix_socket = path;
  HttpServer server(o);
  server.Handle("GET", "/who", [](const HttpRequest& r) {
    return HttpResponse::Text(200, "from " + r.remote_address);
  });
  server.Handle("GET", "/blob", [&](const HttpRequest&) {
    HttpResponse r;
    r.file = std::make_shared<HttpFileBody>(::open(file.c_str(), O_RDONLY), 0, content.size());
    return r;
  });
  REQUIRE(server.Start().ok());
  CHECK(server.port() == 0);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0666);

  std::string who = Exchange(path, "GET /who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(who.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(who.find("\r\n\r\nfrom unix") != std::string::npos);
  std::string blob = Exchange(path, "GET /blob HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  size_t body = blob.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  CHECK(blob.substr(body + 4) == content);

  server.Stop();
  CHECK(::access(path.c_str(), F_OK) != 0);
  ::unlink(file.c_str());
  ::rmdir(dir);
}

TEST_CASE("a unix socket path that is a regular file is refused", "[http]") {
  char path[] = "/tmp/shoal-http-notsock-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  HttpServerOptions o;
  o.unix_socket = path;
  HttpServer server(o);
  Status s = server.Start();
  CHECK(!s.ok());
  CHECK(s.message().find("not a socket") != std::string::npos);
  CHECK(::access(path, F_OK) == 0);  // left alone
  ::unlink(path);
}
