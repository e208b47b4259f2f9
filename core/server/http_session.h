// One HTTP/1.1 connection: reads requests, dispatches them, writes the
// responses, and keeps the connection alive between them. Private to
// shoal_server.
#ifndef SHOAL_SERVER_HTTP_SESSION_H_
#define SHOAL_SERVER_HTTP_SESSION_H_

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "http_router.h"
#include "shoal/server/http_server.h"

namespace shoal {

// Starts serving `socket` on its own strand. The session keeps itself alive
// through its pending operations and ends when the peer goes, a timeout
// fires or the io_context stops.
// Streaming bodies are produced on `workers`.
// REQUIRES: `options` and `router` outlive the socket's io_context; `workers`
// is joined and destroyed before that io_context.
void StartHttpSession(boost::asio::ip::tcp::socket socket, const HttpServerOptions& options,
                      const HttpRouter& router, boost::asio::thread_pool& workers);
// The same over a unix socket; the request's remote_address is "unix".
void StartHttpSession(boost::asio::local::stream_protocol::socket socket,
                      const HttpServerOptions& options, const HttpRouter& router,
                      boost::asio::thread_pool& workers);
// The same over TLS with `tls`, which must outlive the io_context: the
// handshake first, within the idle timeout; file bodies are read and
// encrypted in slices, since sendfile(2) cannot encrypt.
void StartHttpsSession(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls,
                       const HttpServerOptions& options, const HttpRouter& router,
                       boost::asio::thread_pool& workers);

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_SESSION_H_
