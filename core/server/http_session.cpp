#include "server/http_session.h"

#include <sys/sendfile.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>

#include "server/http_wire.h"
#include "shoal/log.h"
#include "shoal/posix_file.h"

namespace shoal {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using local = boost::asio::local::stream_protocol;

// "ip:port" for a TCP peer; "unix" for a peer on the local socket.
std::string RemoteOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  return ec ? std::string() : peer.address().to_string() + ":" + std::to_string(peer.port());
}
std::string RemoteOf(const local::socket&) { return "unix"; }

bool BodyForbidden(int status) { return status < 200 || status == 204 || status == 304; }

// The body source of a response with one file region.
class OnePiece final : public HttpBodySource {
 public:
  explicit OnePiece(HttpBodyPiece piece) : piece_(std::move(piece)) {}
  void Next(Ready ready) override { ready(std::move(piece_)); }

 private:
  HttpBodyPiece piece_;
};

template <class Transport>
struct IsTls : std::false_type {};
template <class Next>
struct IsTls<beast::ssl_stream<Next>> : std::true_type {};

// One connection over TCP, a unix socket, or TLS over TCP (`Transport`).
template <class Transport>
class Session : public std::enable_shared_from_this<Session<Transport>> {
  using std::enable_shared_from_this<Session<Transport>>::shared_from_this;
  static constexpr bool kTls = IsTls<Transport>::value;

 public:
  // `stream_args` construct the stream: a socket, and for TLS the context.
  template <class... StreamArgs>
  Session(const HttpSessionContext& context, ConnectionSlot slot, StreamArgs&&... stream_args)
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
  void Start() {
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

 private:
  // Waits for the next request. Its first byte is awaited up to the idle
  // timeout (keep-alive) unless already here; from that byte on, the header
  // block has the header timeout.
  void Read() {
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

  void ReadHeader() {
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void Count(HttpCut why) { context_.cuts[size_t(why)]->Increment(); }

  // True if the request line is longer than max_request_line_bytes. Once
  // the header is read, or failed at its limit: the parser fills the target
  // in as soon as the line ends, so an empty one means it never did.
  bool RequestLineTooLong() const {
    const auto& msg = parser_->get();
    if (msg.target().empty()) return true;
    size_t line = msg.method_string().size() + 1 + msg.target().size() + 9;  // " HTTP/1.1"
    return line > options_.max_request_line_bytes;
  }

  // A client that sent "Expect: 100-continue" (curl does, for bodies over
  // 1 KiB) waits for a go-ahead before sending the body. A body over the
  // limit has already failed with body_limit here, so it is never invited.
  void OnHeader(beast::error_code ec) {
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

  void ReadBody() {
    Lowest().expires_after(options_.body_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
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
  void Reject(int status, const std::string& message) {
    Send(HttpResponse::Error(status, message), 11, false, false);
  }

  void Send(HttpResponse res, unsigned version, bool keep_alive, bool head) {
    if (res.status < 100 || res.status > 599) {
      Log(LogLevel::kError, "http.bad_status", {{"status", res.status}});
      res = HttpResponse::Error(500, "internal error; the server log has the details");
    }
    if (res.file) {
      // One file region: a source of one piece.
      res.stream_length = int64_t(res.file->length());
      res.source = std::make_shared<OnePiece>(HttpBodyPiece{"", std::move(res.file)});
      res.stream = nullptr;
    } else if (res.stream) {
      res.source = nullptr;
    }
    if (res.source && res.stream_length < 0) {
      Log(LogLevel::kError, "http.source_without_length", {});
      res = HttpResponse::Error(500, "internal error; the server log has the details");
    }
    if (BodyForbidden(res.status) || head) {
      uint64_t length = res.body.size();
      if (res.stream || res.source) length = uint64_t(res.stream_length);
      auto msg = std::make_shared<http::response<http::empty_body>>();
      Fill(res, version, keep_alive, msg.get());
      bool unknown = res.stream && res.stream_length < 0;
      if (!BodyForbidden(res.status) && !unknown) msg->content_length(length);
      return Write(std::move(msg));
    }
    if (res.stream) return SendStream(std::move(res), version, keep_alive);
    if (res.source) return SendSource(std::move(res), version, keep_alive);
    auto msg = std::make_shared<http::response<http::string_body>>();
    Fill(res, version, keep_alive, msg.get());
    msg->body() = std::move(res.body);
    msg->prepare_payload();
    Write(std::move(msg));
  }

  template <class Message>
  void Fill(const HttpResponse& res, unsigned version, bool keep_alive, Message* msg) {
    msg->version(version);
    msg->result(unsigned(res.status));
    if (msg->result() == http::status::unknown) msg->reason(HttpReason(res.status));
    for (const auto& [name, value] : res.headers) {
      if (!IsHeaderSafe(name, value)) {
        // A CR or LF in a value would let it write headers of its own.
        Log(LogLevel::kError, "http.bad_header", {{"name", name}});
        continue;
      }
      msg->insert(name, value);
    }
    msg->keep_alive(keep_alive);
  }

  // Writes piece by piece so the idle timeout applies to each piece, not to
  // the whole of a large body.
  template <class Body>
  void Write(std::shared_ptr<http::response<Body>> msg) {
    auto sr = std::make_shared<http::response_serializer<Body>>(*msg);
    WriteSome(std::move(msg), std::move(sr));
  }

  template <class Body>
  void WriteSome(std::shared_ptr<http::response<Body>> msg,
                 std::shared_ptr<http::response_serializer<Body>> sr) {
    Lowest().expires_after(options_.idle_timeout);
    http::async_write_some(stream_, *sr,
                           [self = shared_from_this(), msg, sr](beast::error_code ec, size_t) {
                             if (ec) return self->Close();
                             if (!sr->is_done()) return self->WriteSome(msg, sr);
                             if (msg->need_eof()) return self->Close();
                             self->Read();
                           });
  }

  struct Stream {
    std::function<bool(std::string*)> produce;
    bool chunked;
    uint64_t remaining;  // when not chunked
    bool need_eof;
    std::string piece;  // being written
  };

  void SendStream(HttpResponse res, unsigned version, bool keep_alive) {
    auto header = std::make_shared<http::response<http::empty_body>>();
    Fill(res, version, keep_alive, header.get());
    auto st = std::make_shared<Stream>();
    st->produce = std::move(res.stream);
    st->chunked = res.stream_length < 0;
    st->remaining = st->chunked ? 0 : uint64_t(res.stream_length);
    if (st->chunked) {
      header->chunked(true);
    } else {
      header->content_length(st->remaining);
    }
    st->need_eof = header->need_eof();
    WriteHeaderThen(header, [self = shared_from_this(), st] { self->ProducePiece(st); });
  }

  // Writes the header of a response whose body follows separately, then
  // runs `next`; closes the connection if the write fails.
  template <typename Next>
  void WriteHeaderThen(std::shared_ptr<http::response<http::empty_body>> header, Next next) {
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*header);
    Lowest().expires_after(options_.idle_timeout);
    http::async_write_header(
        stream_, *sr, [self = shared_from_this(), sr, header, next](beast::error_code ec, size_t) {
          if (ec) return self->Close();
          next();
        });
  }

  // Runs the producer on a worker, then continues on this session's strand.
  void ProducePiece(std::shared_ptr<Stream> st) {
    boost::asio::post(workers_, [self = shared_from_this(), st] {
      std::string piece;
      bool more = false, failed = false;
      try {
        more = st->produce(&piece);
      } catch (const std::exception& e) {
        failed = true;
        Log(LogLevel::kError, "http.stream_exception", {{"what", e.what()}});
      } catch (...) {
        failed = true;
        Log(LogLevel::kError, "http.stream_exception");
      }
      boost::asio::post(self->stream_.get_executor(),
                        [self, st, piece = std::move(piece), more, failed]() mutable {
                          self->WritePiece(st, std::move(piece), more, failed);
                        });
    });
  }

  void WritePiece(std::shared_ptr<Stream> st, std::string piece, bool more, bool failed) {
    if (failed) return Close();
    auto done = [self = shared_from_this(), st](beast::error_code ec, size_t) {
      if (ec) return self->Close();
      if (st->need_eof) return self->Close();
      self->Read();
    };
    auto next = [self = shared_from_this(), st](beast::error_code ec, size_t) {
      if (ec) return self->Close();
      self->ProducePiece(st);
    };
    Lowest().expires_after(options_.idle_timeout);
    if (!more) {
      if (!st->chunked) return st->remaining == 0 ? done({}, 0) : Close();
      return boost::asio::async_write(stream_, http::make_chunk_last(), done);
    }
    if (piece.empty()) return ProducePiece(st);
    if (!st->chunked) {
      if (piece.size() > st->remaining) return Close();
      st->remaining -= piece.size();
    }
    st->piece = std::move(piece);
    boost::asio::const_buffer bytes(st->piece.data(), st->piece.size());
    if (st->chunked) return boost::asio::async_write(stream_, http::make_chunk(bytes), next);
    boost::asio::async_write(stream_, bytes, next);
  }

  struct Source {
    std::shared_ptr<HttpBodySource> source;
    uint64_t remaining;  // bytes still to send
    bool need_eof;
    HttpBodyPiece piece;  // being sent
    uint64_t piece_sent = 0;
  };

  void SendSource(HttpResponse res, unsigned version, bool keep_alive) {
    auto header = std::make_shared<http::response<http::empty_body>>();
    Fill(res, version, keep_alive, header.get());
    auto st = std::make_shared<Source>();
    st->source = std::move(res.source);
    st->remaining = uint64_t(res.stream_length);
    header->content_length(st->remaining);
    st->need_eof = header->need_eof();
    WriteHeaderThen(header, [self = shared_from_this(), st] { self->NextSourcePiece(st); });
  }

  void NextSourcePiece(std::shared_ptr<Source> st) {
    if (st->remaining == 0) {
      if (st->need_eof) return Close();
      return Read();
    }
    // No timeout while the source waits: the client is waiting too.
    Lowest().expires_never();
    st->source->Next([self = shared_from_this(), st](Result<HttpBodyPiece> piece) {
      boost::asio::dispatch(self->stream_.get_executor(),
                            [self, st, piece = std::move(piece)]() mutable {
                              self->WriteSourcePiece(st, std::move(piece));
                            });
    });
  }

  void WriteSourcePiece(std::shared_ptr<Source> st, Result<HttpBodyPiece> piece) {
    if (!piece.ok()) {
      Log(LogLevel::kWarn, "http.source_failed", {{"error", piece.status().ToString()}});
      return Close();
    }
    st->piece = std::move(piece).value();
    st->piece_sent = 0;
    uint64_t length = st->piece.file ? st->piece.file->length() : st->piece.bytes.size();
    if (length == 0 || length > st->remaining) {
      Log(LogLevel::kError, "http.source_bad_piece",
          {{"bytes", length}, {"remaining", st->remaining}});
      return Close();
    }
    st->remaining -= length;
    if (st->piece.file) {
      if constexpr (kTls) return SendFileThroughTls(st);
      sending_file_ = true;
      last_sent_ = std::chrono::steady_clock::now();
      return SendFileSome(st);
    }
    Lowest().expires_after(options_.idle_timeout);
    boost::asio::async_write(stream_, boost::asio::buffer(st->piece.bytes),
                             [self = shared_from_this(), st](beast::error_code ec, size_t) {
                               if (ec) return self->Close();
                               self->NextSourcePiece(st);
                             });
  }

  // TLS encrypts in user space, so a file region is read and written in
  // bounded slices instead of sent with sendfile(2).
  void SendFileThroughTls(std::shared_ptr<Source> st) {
    static constexpr uint64_t kSlice = 256 << 10;
    const HttpFileBody& file = *st->piece.file;
    if (st->piece_sent == file.length()) {
      st->piece = HttpBodyPiece{};
      return NextSourcePiece(st);
    }
    size_t want = size_t(std::min<uint64_t>(file.length() - st->piece_sent, kSlice));
    tls_slice_.resize(want);
    Result<size_t> got = PreadFull(file.fd(), reinterpret_cast<uint8_t*>(&tls_slice_[0]), want,
                                   file.offset() + st->piece_sent, "response body");
    if (!got.ok() || *got != want) {
      Log(LogLevel::kWarn, "http.file_read_failed",
          {{"error", got.ok() ? std::string("file shrank") : got.status().ToString()}});
      return Close();
    }
    st->piece_sent += want;
    Lowest().expires_after(options_.idle_timeout);
    boost::asio::async_write(stream_, boost::asio::buffer(tls_slice_),
                             [self = shared_from_this(), st](beast::error_code ec, size_t) {
                               if (ec) return self->Close();
                               self->SendFileThroughTls(st);
                             });
  }

  // sendfile(2) straight from the file to the socket until the socket is
  // full, then waits for it to drain; at most kSendfileBurst bytes per turn,
  // so one fast reader does not hold an I/O thread.
  void SendFileSome(std::shared_ptr<Source> st) {
    static constexpr uint64_t kSendfileBurst = 4 << 20;
    const HttpFileBody& file = *st->piece.file;
    auto& socket = Lowest().socket();
    if (!sendfile_ready_) {
      boost::system::error_code ec;
      socket.native_non_blocking(true, ec);
      if (ec) return Close();
      // Fewer wake-ups per file: the kernel doubles this, to 8 MiB.
      socket.set_option(boost::asio::socket_base::send_buffer_size(kSendBufferBytes), ec);
      sendfile_ready_ = true;
    }
    uint64_t burst = 0;
    while (st->piece_sent < file.length() && burst < kSendfileBurst) {
      off_t offset = off_t(file.offset() + st->piece_sent);
      size_t want =
          size_t(std::min<uint64_t>(file.length() - st->piece_sent, kSendfileBurst - burst));
      ssize_t n = ::sendfile(socket.native_handle(), file.fd(), &offset, want);
      if (n > 0) {
        st->piece_sent += uint64_t(n);
        burst += uint64_t(n);
        last_sent_ = std::chrono::steady_clock::now();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return WaitWritable(st);
      // n == 0: the file is shorter than promised.
      Log(LogLevel::kWarn, "http.sendfile_failed",
          {{"error", n < 0 ? std::string(std::strerror(errno)) : "file shrank"}});
      return Close();
    }
    if (st->piece_sent < file.length()) {
      return boost::asio::post(stream_.get_executor(),
                               [self = shared_from_this(), st] { self->SendFileSome(st); });
    }
    st->piece = HttpBodyPiece{};
    sending_file_ = false;
    // Posted, not called: a source whose pieces are all ready at once would
    // otherwise recurse a level per piece.
    boost::asio::post(stream_.get_executor(),
                      [self = shared_from_this(), st] { self->NextSourcePiece(st); });
  }

  void WaitWritable(std::shared_ptr<Source> st) {
    if (!send_timer_armed_) ArmSendTimer(options_.idle_timeout);
    Lowest().socket().async_wait(boost::asio::socket_base::wait_write,
                                 [self = shared_from_this(), st](beast::error_code ec) {
                                   if (ec) return self->Close();
                                   self->SendFileSome(st);
                                 });
  }

  // One timer per connection, not one per wait: it closes the connection
  // once nothing has been sent for the idle timeout while sendfile waits.
  void ArmSendTimer(std::chrono::steady_clock::duration after) {
    send_timer_armed_ = true;
    send_timer_.expires_after(after);
    send_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      self->send_timer_armed_ = false;
      if (ec || !self->Lowest().socket().is_open()) return;
      auto idle = std::chrono::steady_clock::now() - self->last_sent_;
      if (idle >= self->options_.idle_timeout) return self->Close();  // the client stopped reading
      if (self->sending_file_) self->ArmSendTimer(self->options_.idle_timeout - idle);
    });
  }

  // With TLS, closes without a close_notify: every response is framed by
  // its length or its chunks, so a cut-off one is seen as cut off anyway.
  void Close() {
    send_timer_.cancel();
    beast::error_code ignored;
    Lowest().socket().shutdown(boost::asio::socket_base::shutdown_send, ignored);
    Lowest().close();
  }

  auto& Lowest() { return beast::get_lowest_layer(stream_); }

  Transport stream_;
  boost::asio::steady_timer send_timer_{stream_.get_executor()};  // sendfile's wait for the socket
  static constexpr int kSendBufferBytes = 4 << 20;
  bool sendfile_ready_ = false;  // non-blocking, with a large send buffer
  bool send_timer_armed_ = false;
  bool sending_file_ = false;  // a file piece is being sent
  std::chrono::steady_clock::time_point last_sent_;
  static constexpr size_t kFirstReadBytes = 4096;
  std::string tls_slice_;  // the file bytes being written through TLS
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool first_request_ = true;  // no request read yet
  const HttpSessionContext& context_;
  const HttpServerOptions& options_;
  const HttpRouter& router_;
  boost::asio::thread_pool& workers_;
  ConnectionSlot slot_;  // counts this connection against the server's limits
  std::string remote_;
};

}  // namespace

void StartHttpSession(tcp::socket socket, const HttpSessionContext& context, ConnectionSlot slot) {
  if (context.tls != nullptr) {
    using Tls = beast::ssl_stream<beast::basic_stream<tcp>>;
    return std::make_shared<Session<Tls>>(context, std::move(slot), std::move(socket), *context.tls)
        ->Start();
  }
  std::make_shared<Session<beast::basic_stream<tcp>>>(context, std::move(slot), std::move(socket))
      ->Start();
}

void StartHttpSession(local::socket socket, const HttpSessionContext& context,
                      ConnectionSlot slot) {
  std::make_shared<Session<beast::basic_stream<local>>>(context, std::move(slot), std::move(socket))
      ->Start();
}

}  // namespace shoal
