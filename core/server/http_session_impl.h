// HttpSession: one HTTP/1.1 connection, the session StartHttpSession
// (http_session.h) starts. Private to the session's files.
//
// Its code is split by what it does: http_session.cpp (the connection's
// life: the deadline from the accept, the TLS handshake, eviction while
// idle, the close), http_session_read.cpp (reading a request within the
// server's limits and timeouts, refusing one over them, and dispatching
// it), http_session_write.cpp (writing the response: whole bodies, and
// streams from a producer), http_session_source.cpp (bodies from an
// HttpBodySource: bytes, and file regions by sendfile(2) or, with TLS, in
// slices).
//
// Threading: the session's work runs on its strand (the stream's
// executor). A stream's producer runs on a worker; what it, the router or
// a body source answers is posted or dispatched back to the strand first.
//
// Lifetime: each pending operation holds the session (shared_from_this);
// it ends when none is left, after Close.
//
// Instantiation: each file defines its members for the three transports
// below. A member another file calls (Close, Read, Send, NextSourcePiece)
// is explicitly instantiated for all three at the end of the file that
// defines it; a new call across files needs the same there. The member
// templates are defined and used in http_session_write.cpp only.
#ifndef SHOAL_SERVER_HTTP_SESSION_IMPL_H_
#define SHOAL_SERVER_HTTP_SESSION_IMPL_H_

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "server/http_session.h"

namespace shoal {

// The transports a session runs over: TCP, a unix socket, TLS over TCP.
using HttpTcpStream = boost::beast::basic_stream<boost::asio::ip::tcp>;
using HttpUnixStream = boost::beast::basic_stream<boost::asio::local::stream_protocol>;
using HttpTlsStream = boost::beast::ssl_stream<HttpTcpStream>;

template <class Transport>
struct IsTlsStream : std::false_type {};
template <class Next>
struct IsTlsStream<boost::beast::ssl_stream<Next>> : std::true_type {};

// One connection over TCP, a unix socket, or TLS over TCP (`Transport`).
template <class Transport>
class HttpSession : public std::enable_shared_from_this<HttpSession<Transport>> {
  using std::enable_shared_from_this<HttpSession<Transport>>::shared_from_this;
  static constexpr bool kTls = IsTlsStream<Transport>::value;

 public:
  // `stream_args` construct the stream: a socket, and for TLS the context.
  template <class... StreamArgs>
  HttpSession(const HttpSessionContext& context, ConnectionSlot slot, StreamArgs&&... stream_args);

  // Starts the handshake (TLS) or the wait for the first request.
  void Start();

 private:
  using ErrorCode = boost::beast::error_code;
  template <class Body>
  using Response = boost::beast::http::response<Body>;
  template <class Body>
  using Serializer = boost::beast::http::response_serializer<Body>;
  using EmptyBody = boost::beast::http::empty_body;

  // A response body from a producer (http_session_write.cpp).
  struct Stream {
    std::function<bool(std::string*)> produce;
    bool chunked;
    uint64_t remaining;  // when not chunked
    bool need_eof;
    std::string piece;  // being written
  };

  // A response body from an HttpBodySource (http_session_source.cpp).
  struct Source {
    std::shared_ptr<HttpBodySource> source;
    uint64_t remaining;  // bytes still to send
    bool need_eof;
    HttpBodyPiece piece;  // being sent
    uint64_t piece_sent = 0;
  };

  // http_session_read.cpp: the next request.
  void Read();
  void ReadHeader();
  bool RequestLineTooLong() const;
  void OnHeader(ErrorCode ec);
  void ReadBody();
  void OnRead(ErrorCode ec);
  void Reject(int status, const std::string& message);

  // http_session_write.cpp: the response.
  void Send(HttpResponse res, unsigned version, bool keep_alive, bool head);
  template <class Message>
  void Fill(const HttpResponse& res, unsigned version, bool keep_alive, Message* msg);
  template <class Body>
  void Write(std::shared_ptr<Response<Body>> msg);
  template <class Body>
  void WriteSome(std::shared_ptr<Response<Body>> msg, std::shared_ptr<Serializer<Body>> sr);
  template <typename Next>
  void WriteHeaderThen(std::shared_ptr<Response<EmptyBody>> header, Next next);
  void SendStream(HttpResponse res, unsigned version, bool keep_alive);
  void ProducePiece(std::shared_ptr<Stream> st);
  void WritePiece(std::shared_ptr<Stream> st, std::string piece, bool more, bool failed);
  void SendSource(HttpResponse res, unsigned version, bool keep_alive);

  // http_session_source.cpp: a body source's pieces.
  void NextSourcePiece(std::shared_ptr<Source> st);
  void WriteSourcePiece(std::shared_ptr<Source> st, Result<HttpBodyPiece> piece);
  void SendFileThroughTls(std::shared_ptr<Source> st);
  void SendFileSome(std::shared_ptr<Source> st);
  void WaitWritable(std::shared_ptr<Source> st);
  void ArmSendTimer(std::chrono::steady_clock::duration after);

  // http_session.cpp.
  void Close();

  void Count(HttpCut why) { context_.cuts[size_t(why)]->Increment(); }
  auto& Lowest() { return boost::beast::get_lowest_layer(stream_); }

  Transport stream_;
  boost::asio::steady_timer send_timer_{stream_.get_executor()};  // sendfile's wait for the socket
  static constexpr int kSendBufferBytes = 4 << 20;
  bool sendfile_ready_ = false;  // non-blocking, with a large send buffer
  bool send_timer_armed_ = false;
  bool sending_file_ = false;  // a file piece is being sent
  std::chrono::steady_clock::time_point last_sent_;
  static constexpr size_t kFirstReadBytes = 4096;
  std::string tls_slice_;  // the file bytes being written through TLS
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool first_request_ = true;  // no request read yet
  const HttpSessionContext& context_;
  const HttpServerOptions& options_;
  const HttpRouter& router_;
  boost::asio::thread_pool& workers_;
  ConnectionSlot slot_;  // counts this connection against the server's limits
  std::string remote_;
};

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_SESSION_IMPL_H_
