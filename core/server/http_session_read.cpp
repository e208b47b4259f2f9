// HttpSession's reading of a request (http_session_impl.h): the wait for
// its first byte, the header and the body each within their timeout, the
// go-ahead for "Expect: 100-continue", the refusal of one over the
// server's limits (414, 431, 413), and its dispatch to the router.
#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <utility>

#include "server/http_session_impl.h"
#include "server/http_wire.h"

namespace shoal {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;

}  // namespace

// Waits for the next request. Its first byte is awaited up to the idle
// timeout (keep-alive) unless already here; from that byte on, the header
// block has the header timeout.
template <class Transport>
void HttpSession<Transport>::Read() {
  parser_.emplace();
  parser_->header_limit(uint32_t(options_.max_header_bytes));
  parser_->body_limit(options_.max_body_bytes);
  bool first = first_request_;  // if so, its deadline runs from the accept
  first_request_ = false;
  if (buffer_.size() > 0) {  // pipelined: its first bytes are here
    Lowest().expires_after(options_.header_timeout);
    return ReadHeader();
  }
  if (!first) Lowest().expires_after(options_.idle_timeout);
  slot_.MarkIdle();
  auto on_first_byte = [self = shared_from_this(), first](beast::error_code ec, size_t n) {
    self->buffer_.commit(n);
    if (!self->slot_.MarkBusy()) return self->Close();  // evicted for a newcomer
    if (ec == beast::error::timeout) {
      self->Count(first ? HttpCut::kHeaderTimeout : HttpCut::kIdleTimeout);
    }
    if (ec) return self->Close();
    if (!first) self->Lowest().expires_after(self->options_.header_timeout);
    self->ReadHeader();
  };
  stream_.async_read_some(buffer_.prepare(kFirstReadBytes), std::move(on_first_byte));
}

template <class Transport>
void HttpSession<Transport>::ReadHeader() {
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
}

// True if the request line is longer than max_request_line_bytes. Once
// the header is read, or failed at its limit: the parser fills the target
// in as soon as the line ends, so an empty one means it never did.
template <class Transport>
bool HttpSession<Transport>::RequestLineTooLong() const {
  const auto& msg = parser_->get();
  if (msg.target().empty()) return true;
  size_t line = msg.method_string().size() + 1 + msg.target().size() + 9;  // " HTTP/1.1"
  return line > options_.max_request_line_bytes;
}

// A client that sent "Expect: 100-continue" (curl does, for bodies over
// 1 KiB) waits for a go-ahead before sending the body. A body over the
// limit has already failed with body_limit here, so it is never invited.
template <class Transport>
void HttpSession<Transport>::OnHeader(beast::error_code ec) {
  if (!ec && RequestLineTooLong()) ec = http::error::header_limit;
  if (ec || parser_->is_done()) return OnRead(ec);
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
    static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    Lowest().expires_after(options_.idle_timeout);
    boost::asio::async_write(stream_, boost::asio::buffer(kContinue, sizeof(kContinue) - 1),
                             [self = shared_from_this()](beast::error_code write_ec, size_t) {
                               if (write_ec) return self->Close();
                               self->ReadBody();
                             });
    return;
  }
  ReadBody();
}

template <class Transport>
void HttpSession<Transport>::ReadBody() {
  Lowest().expires_after(options_.body_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
}

template <class Transport>
void HttpSession<Transport>::OnRead(beast::error_code ec) {
  if (ec == http::error::header_limit) {
    if (RequestLineTooLong()) {
      Count(HttpCut::kRequestLineTooLong);
      return Reject(414, "request line is longer than " +
                             std::to_string(options_.max_request_line_bytes) + " bytes");
    }
    Count(HttpCut::kHeaderTooLarge);
    return Reject(431, "request headers are too large");
  }
  if (ec == http::error::body_limit) {
    Count(HttpCut::kBodyTooLarge);
    return Reject(413, "request body is too large");
  }
  if (ec == beast::error::timeout) {
    Count(parser_->is_header_done() ? HttpCut::kBodyTimeout : HttpCut::kHeaderTimeout);
    return Close();
  }
  if (ec == http::error::end_of_stream || ec == boost::asio::error::operation_aborted) {
    return Close();
  }
  if (ec.category() == beast::error_code(http::error::bad_target).category()) {
    return Reject(400, "malformed request: " + ec.message());
  }
  if (ec) return Close();

  http::request<http::string_body> msg = parser_->release();
  HttpRequest req = RequestFrom(msg, remote_);
  bool keep_alive = msg.keep_alive();
  unsigned version = msg.version();
  bool head = req.method == "HEAD";
  if (!ParseTarget(req.target, &req)) {
    return Send(HttpResponse::Error(400, "malformed request target"), version, keep_alive, head);
  }
  // The answer may come from another thread; it continues on this strand.
  router_.Dispatch(req, [self = shared_from_this(), version, keep_alive, head](HttpResponse res) {
    boost::asio::dispatch(self->stream_.get_executor(),
                          [self, res = std::move(res), version, keep_alive, head]() mutable {
                            self->Send(std::move(res), version, keep_alive, head);
                          });
  });
}

// Answers a request that could not be read, then closes.
template <class Transport>
void HttpSession<Transport>::Reject(int status, const std::string& message) {
  Send(HttpResponse::Error(status, message), 11, false, false);
}

template void HttpSession<HttpTcpStream>::Read();
template void HttpSession<HttpUnixStream>::Read();
template void HttpSession<HttpTlsStream>::Read();

}  // namespace shoal
