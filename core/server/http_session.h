// One HTTP/1.1 connection: reads requests, dispatches them, writes the
// responses, and keeps the connection alive between them. Private to
// shoal_server.
#ifndef SHOAL_SERVER_HTTP_SESSION_H_
#define SHOAL_SERVER_HTTP_SESSION_H_

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "server/connection_limits.h"
#include "server/http_router.h"
#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"

namespace shoal {

// Why a session closed a connection before its request was served.
enum class HttpCut {
  kIdleTimeout,         // no next request within idle_timeout
  kHeaderTimeout,       // the header block not whole within header_timeout
  kBodyTimeout,         // the body not whole within body_timeout
  kHeaderTooLarge,      // 431
  kRequestLineTooLong,  // 414
  kBodyTooLarge,        // 413
  kEvictedIdle,         // idle when a newcomer needed its place (ConnectionLimits)
  kCount
};

// What every session of one server shares.
struct HttpSessionContext {
  const HttpServerOptions& options;
  const HttpRouter& router;
  boost::asio::thread_pool* workers;  // runs streaming producers; set at Start
  // If set, TCP connections speak TLS with it: the handshake first, within
  // header_timeout of the accept; file bodies are read and encrypted in
  // slices, since sendfile(2) cannot encrypt.
  boost::asio::ssl::context* tls;
  Counter* cuts[size_t(HttpCut::kCount)];
};

// Starts serving `socket` on its own strand. The session keeps itself alive
// through its pending operations and ends when the peer goes, a timeout
// fires, `slot` is evicted while the session waits for a request, or the
// io_context stops; `slot` is released then.
// REQUIRES: everything in `context` outlives the socket's io_context, except
// the workers, which are joined and destroyed before that io_context.
void StartHttpSession(boost::asio::ip::tcp::socket socket, const HttpSessionContext& context,
                      ConnectionSlot slot);
// The same over a unix socket; the request's remote_address is "unix".
void StartHttpSession(boost::asio::local::stream_protocol::socket socket,
                      const HttpSessionContext& context, ConnectionSlot slot);

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_SESSION_H_
