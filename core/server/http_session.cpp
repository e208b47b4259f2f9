// HttpSession's life (http_session_impl.h): its start, with the deadline
// from the accept and the TLS handshake, its eviction while idle, its
// close; and StartHttpSession, which picks the transport.
#include <boost/asio/post.hpp>
#include <string>
#include <utility>

#include "server/http_session_impl.h"
#include "shoal/log.h"

namespace shoal {
namespace {

namespace beast = boost::beast;
using tcp = boost::asio::ip::tcp;
using local = boost::asio::local::stream_protocol;

// "ip:port" for a TCP peer; "unix" for a peer on the local socket.
std::string RemoteOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  return ec ? std::string() : peer.address().to_string() + ":" + std::to_string(peer.port());
}
std::string RemoteOf(const local::socket&) { return "unix"; }

}  // namespace

template <class Transport>
template <class... StreamArgs>
HttpSession<Transport>::HttpSession(const HttpSessionContext& context, ConnectionSlot slot,
                                    StreamArgs&&... stream_args)
    : stream_(std::forward<StreamArgs>(stream_args)...),
      context_(context),
      options_(context.options),
      router_(context.router),
      workers_(*context.workers),
      slot_(std::move(slot)) {
  remote_ = RemoteOf(Lowest().socket());
}

// A new connection's first request, and with TLS its handshake before
// it, must arrive whole within the header timeout of the accept. Until
// its first byte (and through the handshake) it is idle, and may be
// evicted to make room for a newcomer: the close then comes through the
// strand, and MarkBusy keeps an evicted session from going on.
template <class Transport>
void HttpSession<Transport>::Start() {
  slot_.SetEvictor([weak = this->weak_from_this(), strand = stream_.get_executor()] {
    boost::asio::post(strand, [weak] {
      if (auto self = weak.lock()) self->Close();
    });
  });
  Lowest().expires_after(options_.header_timeout);
  if constexpr (kTls) {
    slot_.MarkIdle();
    stream_.async_handshake(boost::asio::ssl::stream_base::server,
                            [self = shared_from_this()](beast::error_code ec) {
                              if (ec) {
                                if (ec == beast::error::timeout) {
                                  self->Count(HttpCut::kHeaderTimeout);
                                }
                                Log(LogLevel::kDebug, "http.tls_handshake_failed",
                                    {{"peer", self->remote_}, {"error", ec.message()}});
                                return self->Close();
                              }
                              self->Read();
                            });
  } else {
    Read();
  }
}

// With TLS, closes without a close_notify: every response is framed by
// its length or its chunks, so a cut-off one is seen as cut off anyway.
template <class Transport>
void HttpSession<Transport>::Close() {
  send_timer_.cancel();
  beast::error_code ignored;
  Lowest().socket().shutdown(boost::asio::socket_base::shutdown_send, ignored);
  Lowest().close();
}

template void HttpSession<HttpTcpStream>::Close();
template void HttpSession<HttpUnixStream>::Close();
template void HttpSession<HttpTlsStream>::Close();

void StartHttpSession(tcp::socket socket, const HttpSessionContext& context, ConnectionSlot slot) {
  if (context.tls != nullptr) {
    return std::make_shared<HttpSession<HttpTlsStream>>(context, std::move(slot), std::move(socket),
                                                        *context.tls)
        ->Start();
  }
  std::make_shared<HttpSession<HttpTcpStream>>(context, std::move(slot), std::move(socket))
      ->Start();
}

void StartHttpSession(local::socket socket, const HttpSessionContext& context,
                      ConnectionSlot slot) {
  std::make_shared<HttpSession<HttpUnixStream>>(context, std::move(slot), std::move(socket))
      ->Start();
}

}  // namespace shoal
