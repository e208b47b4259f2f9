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
// request lines over the limit 414, header blocks over the limit 431, and a
// handler that throws a 500; none of these affects other connections. The
// bounds on connections and the deadlines are in HttpServerOptions.
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
#include "shoal/server/metrics.h"
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
  int threads = 2;                      // I/O threads, 1 to 256
  size_t max_header_bytes = 16 * 1024;  // request line and headers; more gets 431
  // Method, target and version; more gets 414 (a line that also overflows
  // max_header_bytes gets 414 too).
  size_t max_request_line_bytes = 8 * 1024;
  size_t max_body_bytes = 1024 * 1024;  // request body; more gets 413
  // Connections open at once, in all and from one client IP address (the
  // unix socket's clients are exempt from the per-client count: they are
  // the node's own pods and share one address). A connection beyond either
  // is accepted, answered 503 with Retry-After, and closed at once, except
  // that when all max_connections are open a newcomer is let in by closing
  // the oldest idle connection (one waiting for a request) of the busiest
  // address that holds more than the newcomer's and has one. The unix
  // socket's clients are never closed so.
  size_t max_connections = 4096;
  size_t max_connections_per_client = 256;
  // Keep-alive: how long a connection may wait for its next request's first
  // byte; also how long one write of a response may stall.
  std::chrono::milliseconds idle_timeout{30000};
  // A request's whole header block must arrive within this of its first
  // byte (a new connection's first request: of the accept), so a client
  // sending a byte a second cannot hold a connection.
  std::chrono::milliseconds header_timeout{10000};
  // A request's whole body must arrive within this of its header.
  std::chrono::milliseconds body_timeout{60000};
  // If set, connection counts, refusals and cut requests are counted here,
  // labelled listener=metrics_listener (see docs/metrics.md). Not owned;
  // must outlive the server.
  MetricsRegistry* metrics = nullptr;
  std::string metrics_listener = "http";
  // If set, TCP connections speak TLS (1.2 or later) with this identity;
  // the handshake must finish within header_timeout of the accept. Not on a
  // unix socket.
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
