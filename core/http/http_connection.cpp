#include "shoal/http/http_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <limits>
#include <optional>
#include <vector>

namespace shoal {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 256 << 10;  // body bytes handed to a sink per step
constexpr size_t kSocketRead = 64 << 10;  // Beast's cap on one socket read
constexpr size_t kMaxErrorBody = 64 << 10;
constexpr size_t kMaxPlainBody = 32 << 20;

// Completion handler that records the outcome of one async step.
struct Outcome {
  error_code ec = asio::error::would_block;
  size_t bytes = 0;
};
struct Recorder {
  Outcome* out;
  void operator()(error_code ec) const { out->ec = ec; }
  void operator()(error_code ec, size_t n) const {
    out->ec = ec;
    out->bytes = n;
  }
  void operator()(error_code ec, const tcp::endpoint&) const { out->ec = ec; }
};

}  // namespace

struct HttpConnection::Impl {
  HttpEndpoint endpoint;
  std::shared_ptr<TlsClientContext> tls;
  HttpTimeouts timeouts;
  asio::io_context ioc{1};
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  std::vector<uint8_t> chunk = std::vector<uint8_t>(kReadChunk);
  bool open = false;
  bool keep_alive = false;

  // Beast sizes each socket read by the buffer's spare capacity (up to
  // 64 KiB); the default 512 bytes would cost a system call per 512 bytes.
  Impl() { buffer.reserve(kSocketRead); }

  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
  const beast::tcp_stream& lowest() const {
    return secure ? beast::get_lowest_layer(*secure) : *plain;
  }

  // Starts one async step and runs the io_context until it completes. The
  // stream's expiry, set before, bounds how long that can take.
  template <typename Start>
  Outcome Run(Start&& start) {
    Outcome out;
    start(Recorder{&out});
    ioc.restart();
    ioc.run();
    return out;
  }

  void Close() {
    plain.reset();
    secure.reset();
    buffer.clear();
    open = false;
    keep_alive = false;
  }

  std::string Where() const { return endpoint.ToString(); }

  Status TransportError(const std::string& step, const error_code& ec, uint32_t timeout_ms,
                        ExchangeInfo* info) {
    info->retryable = true;
    if (ec == beast::error::timeout) {
      return Status::Unavailable(step + " " + Where() + ": no progress within " +
                                 std::to_string(timeout_ms) + " ms");
    }
    return Status::Unavailable(step + " " + Where() + ": " + ec.message());
  }

  Status Connect(ExchangeInfo* info) {
    Close();
    tcp::resolver resolver(ioc);
    error_code ec;
    auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
    if (ec) return TransportError("resolve", ec, timeouts.connect_ms, info);
    if (endpoint.tls) {
      secure.emplace(ioc, *static_cast<asio::ssl::context*>(tls->native()));
    } else {
      plain.emplace(ioc);
    }
    lowest().expires_after(std::chrono::milliseconds(timeouts.connect_ms));
    Outcome o = Run([&](Recorder h) { lowest().async_connect(results, h); });
    if (o.ec) {
      Close();
      return TransportError("connect to", o.ec, timeouts.connect_ms, info);
    }
    lowest().socket().set_option(tcp::no_delay(true), ec);
    if (secure) SHOAL_RETURN_IF_ERROR(Handshake(info));
    open = true;
    return Status::OK();
  }

  Status Handshake(ExchangeInfo* info) {
    SSL* ssl = secure->native_handle();
    error_code addr_ec;
    asio::ip::make_address(endpoint.host, addr_ec);
    const bool is_ip = !addr_ec;
    if (!is_ip) SSL_set_tlsext_host_name(ssl, endpoint.host.c_str());
    if (tls->verify()) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, endpoint.host.c_str())
                     : X509_VERIFY_PARAM_set1_host(param, endpoint.host.c_str(), 0);
      if (ok != 1) return Status::InvalidArgument("cannot check TLS name " + endpoint.host);
    }
    lowest().expires_after(std::chrono::milliseconds(timeouts.connect_ms));
    Outcome o =
        Run([&](Recorder h) { secure->async_handshake(asio::ssl::stream_base::client, h); });
    if (!o.ec) return Status::OK();
    long verify = SSL_get_verify_result(ssl);
    Close();
    if (o.ec != beast::error::timeout && verify != X509_V_OK) {
      // A certificate problem will not fix itself: do not retry.
      info->retryable = false;
      return Status::PermissionDenied(
          "TLS certificate of " + Where() +
          " was rejected: " + X509_verify_cert_error_string(verify) +
          "; pass the CA that signed it as the CA file, or fix the endpoint's host name");
    }
    return TransportError("TLS handshake with", o.ec, timeouts.connect_ms, info);
  }

  // Writes the request. A write that fails after some bytes went out on
  // plain HTTP is left in *write_error, not returned: the server may have
  // answered before reading the body.
  template <typename Stream>
  Status SendRequest(Stream& stream, const OriginHttpRequest& request, ExchangeInfo* info,
                     error_code* write_error) {
    http::request<http::buffer_body> req;
    req.method(http::string_to_verb(request.method));
    req.target(request.target);
    req.version(11);
    for (const auto& [k, v] : request.headers) req.set(k, v);
    req.body().data = const_cast<uint8_t*>(request.body);
    req.body().size = request.body_len;
    req.body().more = false;
    if (request.body_len > 0 || request.method == "PUT" || request.method == "POST") {
      req.content_length(request.body_len);
    }
    http::request_serializer<http::buffer_body> sr{req};
    while (!sr.is_done()) {
      lowest().expires_after(std::chrono::milliseconds(timeouts.io_ms));
      Outcome o = Run([&](Recorder h) { http::async_write_some(stream, sr, h); });
      if (o.bytes > 0) info->sent_any = true;
      if (!o.ec) continue;
      // A server may refuse a request before reading its body (403, 413)
      // and hang up; on plain HTTP its answer can still be read, and it
      // says more than "connection reset". TLS state is unusable after a
      // failed write.
      if (o.ec == beast::error::timeout || !info->sent_any || endpoint.tls) {
        return TransportError("send to", o.ec, timeouts.io_ms, info);
      }
      *write_error = o.ec;
      break;
    }
    return Status::OK();
  }

  // Reads the status line and headers into *response.
  template <typename Stream>
  Status ReadHead(Stream& stream, http::response_parser<http::buffer_body>& parser,
                  error_code write_error, OriginHttpResponse* response, ExchangeInfo* info) {
    lowest().expires_after(std::chrono::milliseconds(timeouts.io_ms));
    Outcome o = Run([&](Recorder h) { http::async_read_header(stream, buffer, parser, h); });
    if (o.ec && write_error) return TransportError("send to", write_error, timeouts.io_ms, info);
    if (o.ec) return TransportError("read response from", o.ec, timeouts.io_ms, info);
    info->got_response = true;
    response->status = parser.get().result_int();
    response->headers = HttpHeaders();
    for (const auto& field : parser.get()) {
      response->headers.Add(LowercaseHeaderName(field.name_string()),
                            std::string_view(field.value().data(), field.value().size()));
    }
    return Status::OK();
  }

  // Reads the body: a 2xx one into `sink` if given, else (and any error
  // body) into response->body, up to a limit.
  template <typename Stream>
  Status ReadBody(Stream& stream, http::response_parser<http::buffer_body>& parser, ByteSink* sink,
                  OriginHttpResponse* response, ExchangeInfo* info) {
    response->body.clear();
    const bool ok_status = response->status / 100 == 2;
    const bool to_sink = sink != nullptr && ok_status;
    const size_t keep_limit = ok_status ? kMaxPlainBody : kMaxErrorBody;
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      lowest().expires_after(std::chrono::milliseconds(timeouts.io_ms));
      Outcome o = Run([&](Recorder h) { http::async_read(stream, buffer, parser, h); });
      if (o.ec == http::error::need_buffer) o.ec = {};
      const size_t n = chunk.size() - parser.get().body().size;
      if (n > 0) {
        if (to_sink) {
          Status s = sink->Write(chunk.data(), n);
          if (!s.ok()) {
            info->sink_failed = true;
            return s;
          }
          info->body_bytes += n;
        } else if (response->body.size() < keep_limit) {
          response->body.append(reinterpret_cast<const char*>(chunk.data()),
                                std::min(n, keep_limit - response->body.size()));
        }
      }
      if (o.ec) {
        if (o.ec == http::error::partial_message || o.ec == http::error::end_of_stream ||
            o.ec == asio::error::eof) {
          info->retryable = true;
          return Status::Unavailable("short body from " + Where() +
                                     ": the connection closed after " +
                                     std::to_string(info->body_bytes) + " body bytes");
        }
        return TransportError("read body from", o.ec, timeouts.io_ms, info);
      }
    }
    return Status::OK();
  }

  template <typename Stream>
  Status DoExchange(Stream& stream, const OriginHttpRequest& request, ByteSink* sink,
                    OriginHttpResponse* response, ExchangeInfo* info) {
    error_code write_error;
    SHOAL_RETURN_IF_ERROR(SendRequest(stream, request, info, &write_error));
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (request.method == "HEAD") parser.skip(true);
    SHOAL_RETURN_IF_ERROR(ReadHead(stream, parser, write_error, response, info));
    SHOAL_RETURN_IF_ERROR(ReadBody(stream, parser, sink, response, info));
    keep_alive = parser.keep_alive() && !write_error;
    return Status::OK();
  }
};

HttpConnection::HttpConnection(const HttpEndpoint& endpoint, std::shared_ptr<TlsClientContext> tls,
                               const HttpTimeouts& timeouts)
    : impl_(std::make_unique<Impl>()), last_used_(std::chrono::steady_clock::now()) {
  impl_->endpoint = endpoint;
  impl_->tls = std::move(tls);
  impl_->timeouts = timeouts;
}

HttpConnection::~HttpConnection() = default;

Status HttpConnection::Exchange(const OriginHttpRequest& request, ByteSink* sink,
                                OriginHttpResponse* response, ExchangeInfo* info) {
  *info = ExchangeInfo();
  if (!impl_->open) {
    Status s = impl_->Connect(info);
    if (!s.ok()) return s;
  }
  Status s = impl_->secure ? impl_->DoExchange(*impl_->secure, request, sink, response, info)
                           : impl_->DoExchange(*impl_->plain, request, sink, response, info);
  if (!s.ok() || !impl_->keep_alive) impl_->Close();
  last_used_ = std::chrono::steady_clock::now();
  return s;
}

bool HttpConnection::reusable() const { return impl_->open && impl_->keep_alive; }

bool HttpConnection::StillOpen() const {
  if (!reusable()) return false;
  int fd = const_cast<Impl&>(*impl_).lowest().socket().native_handle();
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return false;  // the peer closed it
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
  // Unread bytes on an idle plain connection are a protocol error; on TLS
  // they may be a session ticket, which the next read consumes.
  return impl_->endpoint.tls;
}

}  // namespace shoal
