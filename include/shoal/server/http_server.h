// HttpServer: the small HTTP/1.1 server inside Shoal's daemons, for
// /metrics, /healthz, the tracker's JSON views and the agent's file routes.
//
//   HttpServer server(options);
//   server.Handle("GET", "/healthz", [](const HttpRequest&) { ... });
//   server.Handle("GET", "/v1/models/*", ...);   // a trailing '*' matches a prefix
//   SHOAL_RETURN_IF_ERROR(server.Start());
//
// Every route is declared before Start(). An exact pattern beats a prefix
// pattern, and a longer prefix beats a shorter one. A HEAD request runs the
// GET handler and sends its headers without the body. Unknown paths get a
// JSON 404, known paths with the wrong method 405, bodies over the limit 413,
// header blocks over the limit 431, and a handler that throws a 500; none of
// these affects other connections.
//
// Handlers run on the server's I/O threads, so a slow handler holds one of
// them; keep handlers short or hand work elsewhere. An asynchronous handler
// (HandleAsync) returns at once and answers later, from any thread, through
// its responder; a body that trickles in goes out through an HttpBodySource.
// File bodies are sent with sendfile(2).
#ifndef SHOAL_SERVER_HTTP_SERVER_H_
#define SHOAL_SERVER_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "shoal/server/http_message.h"
#include "shoal/status.h"
#include "shoal/tls_files.h"

namespace shoal {

struct HttpServerOptions {
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal to listen on
  uint16_t port = 0;                  // 0 picks a free port; see port()
  // If set, listen on this unix socket path instead of address and port: a
  // stale socket there is replaced, the socket is made connectable by every
  // local user (mode 0666: callers authenticate per request), and it is
  // removed on Stop. Requests from it have remote_address "unix".
  std::string unix_socket;
  int threads = 2;                                // I/O threads, 1 to 256
  size_t max_header_bytes = 16 * 1024;            // request line and headers
  size_t max_body_bytes = 1024 * 1024;            // request body
  std::chrono::milliseconds idle_timeout{30000};  // per read or write, and between requests
  // If set, TCP connections speak TLS (1.2 or later) with this identity.
  // Not on a unix socket.
  std::optional<TlsServerPem> tls;

  Status Validate() const;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// Sends the response. Call it exactly once, from any thread.
using HttpResponder = std::function<void(HttpResponse)>;
// The request is valid only during the call: copy what the answer needs.
using HttpAsyncHandler = std::function<void(const HttpRequest&, HttpResponder)>;

// Thread-safety: Handle must be called before Start, from one thread. Start,
// Stop and port may be called from any one thread; handlers are called
// concurrently from the I/O threads.
class HttpServer {
 public:
  using Handler = HttpHandler;

  explicit HttpServer(HttpServerOptions options);
  // Stops the server if it is running.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes `method` requests whose path equals `pattern`, or, if `pattern`
  // ends in '*', starts with the part before the '*'.
  // REQUIRES: not started; no route yet for the same method and pattern.
  void Handle(std::string method, std::string pattern, HttpHandler handler);
  // As Handle, for a handler that answers later through its responder.
  // REQUIRES: as Handle; every responder is called or destroyed before Stop.
  void HandleAsync(std::string method, std::string pattern, HttpAsyncHandler handler);

  // Binds, listens and starts the I/O threads. InvalidArgument for bad
  // options (a TLS identity OpenSSL refuses included), IOError naming the
  // address if it cannot be bound.
  // REQUIRES: called at most once.
  Status Start();

  // The bound port, once started; 0 on a unix socket.
  uint16_t port() const;

  // Closes the listener and every connection and joins the I/O threads,
  // waiting for running handlers and stream producers to return. Idempotent.
  // REQUIRES: not called from a handler or producer of this server.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_SERVER_H_
