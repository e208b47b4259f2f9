#include "shoal/server/http_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "server/http_router.h"
#include "server/http_session.h"
#include "shoal/log.h"

namespace shoal {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;

Status HttpServerOptions::Validate() const {
  boost::system::error_code ec;
  asio::ip::make_address(address, ec);
  if (!unix_socket.empty()) {
    if (unix_socket.size() >= sizeof(sockaddr_un::sun_path)) {
      return Status::InvalidArgument("HTTP unix socket path '" + unix_socket + "' is longer than " +
                                     std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
    }
  } else if (ec) {
    return Status::InvalidArgument("HTTP listen address '" + address +
                                   "' is not an IPv4 or IPv6 address");
  }
  if (threads < 1 || threads > 256) {
    return Status::InvalidArgument("HTTP server threads must be 1 to 256, got " +
                                   std::to_string(threads));
  }
  if (max_header_bytes < 1024 || max_header_bytes > (uint32_t(1) << 30)) {
    return Status::InvalidArgument("HTTP max_header_bytes must be 1 KiB to 1 GiB");
  }
  if (max_body_bytes > (uint64_t(1) << 40)) {
    return Status::InvalidArgument("HTTP max_body_bytes must be at most 1 TiB");
  }
  if (max_request_line_bytes < 64) {
    return Status::InvalidArgument("HTTP max_request_line_bytes must be at least 64, got " +
                                   std::to_string(max_request_line_bytes));
  }
  if (max_connections < 1 || max_connections > 1000000) {
    return Status::InvalidArgument("HTTP max_connections must be 1 to 1000000, got " +
                                   std::to_string(max_connections));
  }
  if (max_connections_per_client < 1) {
    return Status::InvalidArgument("HTTP max_connections_per_client must be at least 1");
  }
  if (idle_timeout.count() <= 0 || header_timeout.count() <= 0 || body_timeout.count() <= 0) {
    return Status::InvalidArgument("HTTP idle, header and body timeouts must be positive");
  }
  if (tls && !unix_socket.empty()) {
    return Status::InvalidArgument("HTTP over a unix socket does not take TLS");
  }
  return Status::OK();
}

namespace {

// The client a TCP connection counts against: its IP address. Unix socket
// clients are exempt from the per-client limit ("").
std::string ClientOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  return ec ? std::string("?") : peer.address().to_string();
}
std::string ClientOf(const local::socket&) { return ""; }

// Answers a connection over the limits without reading from it, and closes
// it. One non-blocking send of a few bytes: if the socket cannot take them
// at once, the client just sees the close.
template <class Socket>
void Refuse(Socket& socket) {
  static const char k503[] =
      "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
      "Connection: close\r\n\r\n";
  ::send(socket.native_handle(), k503, sizeof(k503) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  boost::system::error_code ignored;
  socket.close(ignored);
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpServerOptions o)
      : options(std::move(o)),
        registry(options.metrics ? *options.metrics : own_registry),
        limits(std::make_shared<ConnectionLimits>(
            options.max_connections, options.max_connections_per_client,
            &registry.gauge("shoal_http_connections", "Open HTTP connections",
                            {{"listener", options.metrics_listener}}))),
        refused_total(Refusals("too_many_connections")),
        refused_client(Refusals("too_many_from_client")),
        accept_errors(registry.counter(
            "shoal_http_accept_errors_total",
            "Failed accepts (out of descriptors, most likely); each backs off 100 ms",
            {{"listener", options.metrics_listener}})),
        context{options, router, nullptr, nullptr, {}} {
    const char* reasons[] = {"idle_timeout",     "header_timeout",        "body_timeout",
                             "header_too_large", "request_line_too_long", "body_too_large",
                             "evicted_idle"};
    static_assert(sizeof(reasons) / sizeof(reasons[0]) == size_t(HttpCut::kCount));
    for (size_t i = 0; i < size_t(HttpCut::kCount); ++i) {
      context.cuts[i] =
          &registry.counter("shoal_http_connections_cut_total",
                            "Connections the server closed before serving a request, by reason",
                            {{"listener", options.metrics_listener}, {"reason", reasons[i]}});
    }
  }

  Counter& Refusals(const char* reason) {
    return registry.counter("shoal_http_connections_refused_total",
                            "Connections refused at accept (answered 503), by limit reached",
                            {{"listener", options.metrics_listener}, {"reason", reason}});
  }

  template <class Socket>
  void Admit(Socket socket) {
    Admission why;
    ConnectionSlot slot = limits->TryAdmit(ClientOf(socket), &why);
    if (!slot) {
      (why == Admission::kTooManyInAll ? refused_total : refused_client).Increment();
      return Refuse(socket);
    }
    // Counted here: the evicted connection is sure to close, a moment later.
    if (why == Admission::kAdmittedByEvicting) {
      context.cuts[size_t(HttpCut::kEvictedIdle)]->Increment();
    }
    StartHttpSession(std::move(socket), context, std::move(slot));
  }

  template <class Acceptor>
  void Accept(Acceptor& acceptor) {
    acceptor.async_accept(asio::make_strand(*ioc),
                          [this, &acceptor](boost::system::error_code ec,
                                            typename Acceptor::protocol_type::socket socket) {
                            if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
                            if (!ec) {
                              Admit(std::move(socket));
                              return Accept(acceptor);
                            }
                            // Out of descriptors, most likely: back off instead of spinning.
                            accept_errors.Increment();
                            Log(LogLevel::kWarn, "http.accept_failed", {{"error", ec.message()}});
                            retry.expires_after(std::chrono::milliseconds(100));
                            retry.async_wait([this, &acceptor](boost::system::error_code wait_ec) {
                              if (!wait_ec) Accept(acceptor);
                            });
                          });
  }

  // The TLS context of options.tls: TLS 1.2 or later, its chain and key.
  Status MakeTlsContext() {
    auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    boost::system::error_code ec;
    context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                             asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                             asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                         ec);
    if (!ec) context->use_certificate_chain(asio::buffer(options.tls->cert_chain), ec);
    if (!ec) context->use_private_key(asio::buffer(options.tls->key), asio::ssl::context::pem, ec);
    if (ec) return Status::InvalidArgument("HTTP TLS certificate or key refused: " + ec.message());
    tls = std::move(context);
    this->context.tls = tls.get();
    return Status::OK();
  }

  Status ListenTcp() {
    std::string where = options.address + ":" + std::to_string(options.port);
    tcp::endpoint endpoint(asio::ip::make_address(options.address), options.port);
    boost::system::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      acceptor.close();
      return Status::IOError("cannot listen for HTTP on " + where + ": " + ec.message());
    }
    port = acceptor.local_endpoint().port();
    return Status::OK();
  }

  Status ListenUnix() {
    const std::string& path = options.unix_socket;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        return Status::InvalidArgument("cannot listen for HTTP on " + path +
                                       ": it exists and is not a socket");
      }
      ::unlink(path.c_str());  // left by an earlier run
    }
    boost::system::error_code ec;
    local_acceptor.open(local(), ec);
    if (!ec) local_acceptor.bind(local::endpoint(path), ec);
    if (!ec) local_acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec && ::chmod(path.c_str(), 0666) != 0) ec.assign(errno, boost::system::system_category());
    if (ec) {
      local_acceptor.close();
      return Status::IOError("cannot listen for HTTP on unix socket " + path + ": " + ec.message());
    }
    return Status::OK();
  }

  // Declaration order is destruction order in reverse: the io_context, and
  // with it every session, goes before the router, options, limits and
  // counters they use.
  const HttpServerOptions options;
  MetricsRegistry own_registry;  // used when options.metrics is not set
  MetricsRegistry& registry;
  std::shared_ptr<ConnectionLimits> limits;
  Counter& refused_total;
  Counter& refused_client;
  Counter& accept_errors;
  HttpRouter router;
  std::unique_ptr<asio::ssl::context> tls;  // with options.tls
  HttpSessionContext context;
  std::unique_ptr<asio::io_context> ioc{new asio::io_context};
  // Runs streaming producers; joined and destroyed before the io_context.
  std::unique_ptr<asio::thread_pool> workers;
  std::optional<tcp::acceptor> acceptor_storage{std::in_place, *ioc};
  std::optional<local::acceptor> local_acceptor_storage{std::in_place, *ioc};
  std::optional<asio::steady_timer> retry_storage{std::in_place, *ioc};
  tcp::acceptor& acceptor = *acceptor_storage;
  local::acceptor& local_acceptor = *local_acceptor_storage;
  asio::steady_timer& retry = *retry_storage;
  std::vector<std::thread> threads;
  bool started = false;
  uint16_t port = 0;
};

HttpServer::HttpServer(HttpServerOptions options) : impl_(new Impl(std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(std::string method, std::string pattern, HttpHandler handler) {
  if (impl_->started) throw std::logic_error("HttpServer::Handle called after Start");
  impl_->router.Add(std::move(method), std::move(pattern), std::move(handler));
}

void HttpServer::HandleAsync(std::string method, std::string pattern, HttpAsyncHandler handler) {
  if (impl_->started) throw std::logic_error("HttpServer::HandleAsync called after Start");
  impl_->router.AddAsync(std::move(method), std::move(pattern), std::move(handler));
}

Status HttpServer::Start() {
  if (impl_->started || !impl_->ioc) {
    throw std::logic_error("HttpServer::Start called twice, or after Stop");
  }
  SHOAL_RETURN_IF_ERROR(impl_->options.Validate());
  const HttpServerOptions& o = impl_->options;
  if (o.tls) SHOAL_RETURN_IF_ERROR(impl_->MakeTlsContext());
  SHOAL_RETURN_IF_ERROR(o.unix_socket.empty() ? impl_->ListenTcp() : impl_->ListenUnix());
  impl_->started = true;
  impl_->workers.reset(new asio::thread_pool(size_t(o.threads)));
  impl_->context.workers = impl_->workers.get();
  if (o.unix_socket.empty()) {
    impl_->Accept(impl_->acceptor);
  } else {
    impl_->Accept(impl_->local_acceptor);
  }
  for (int i = 0; i < o.threads; ++i) {
    impl_->threads.emplace_back([this] {
      // An exception escaping a completion handler must not end the thread,
      // and with it the process; run() may be resumed after one.
      while (true) {
        try {
          impl_->ioc->run();
          return;
        } catch (const std::exception& e) {
          Log(LogLevel::kError, "http.io_exception", {{"what", e.what()}});
        }
      }
    });
  }
  return Status::OK();
}

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  if (!impl_ || !impl_->ioc) return;
  impl_->ioc->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  if (impl_->workers) {
    impl_->workers->stop();
    impl_->workers->join();
    impl_->workers.reset();
  }  // drops producers that never ran, and their sessions
  // No thread runs the io_context now. Destroying it destroys every pending
  // handler, and with them the sessions and their sockets.
  impl_->retry_storage.reset();
  impl_->acceptor_storage.reset();
  impl_->local_acceptor_storage.reset();
  impl_->ioc.reset();
  if (impl_->started && !impl_->options.unix_socket.empty())
    ::unlink(impl_->options.unix_socket.c_str());
}

}  // namespace shoal
