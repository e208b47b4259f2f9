// HttpSession's writing of a response (http_session_impl.h): the status
// and headers, a whole body a piece at a time, a HEAD or bodiless answer,
// a stream from a producer run on a worker (sized or chunked), and the
// header of a response whose body comes from a source.
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <exception>
#include <string>
#include <utility>

#include "server/http_session_impl.h"
#include "server/http_wire.h"
#include "shoal/log.h"

namespace shoal {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;

bool BodyForbidden(int status) { return status < 200 || status == 204 || status == 304; }

// The body source of a response with one file region.
class OnePiece final : public HttpBodySource {
 public:
  explicit OnePiece(HttpBodyPiece piece) : piece_(std::move(piece)) {}
  void Next(Ready ready) override { ready(std::move(piece_)); }

 private:
  HttpBodyPiece piece_;
};

}  // namespace

template <class Transport>
void HttpSession<Transport>::Send(HttpResponse res, unsigned version, bool keep_alive, bool head) {
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

template <class Transport>
template <class Message>
void HttpSession<Transport>::Fill(const HttpResponse& res, unsigned version, bool keep_alive,
                                  Message* msg) {
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
template <class Transport>
template <class Body>
void HttpSession<Transport>::Write(std::shared_ptr<http::response<Body>> msg) {
  auto sr = std::make_shared<http::response_serializer<Body>>(*msg);
  WriteSome(std::move(msg), std::move(sr));
}

template <class Transport>
template <class Body>
void HttpSession<Transport>::WriteSome(std::shared_ptr<http::response<Body>> msg,
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

template <class Transport>
void HttpSession<Transport>::SendStream(HttpResponse res, unsigned version, bool keep_alive) {
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
template <class Transport>
template <typename Next>
void HttpSession<Transport>::WriteHeaderThen(
    std::shared_ptr<http::response<http::empty_body>> header, Next next) {
  auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*header);
  Lowest().expires_after(options_.idle_timeout);
  http::async_write_header(
      stream_, *sr, [self = shared_from_this(), sr, header, next](beast::error_code ec, size_t) {
        if (ec) return self->Close();
        next();
      });
}

// Runs the producer on a worker, then continues on this session's strand.
template <class Transport>
void HttpSession<Transport>::ProducePiece(std::shared_ptr<Stream> st) {
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

template <class Transport>
void HttpSession<Transport>::WritePiece(std::shared_ptr<Stream> st, std::string piece, bool more,
                                        bool failed) {
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

template <class Transport>
void HttpSession<Transport>::SendSource(HttpResponse res, unsigned version, bool keep_alive) {
  auto header = std::make_shared<http::response<http::empty_body>>();
  Fill(res, version, keep_alive, header.get());
  auto st = std::make_shared<Source>();
  st->source = std::move(res.source);
  st->remaining = uint64_t(res.stream_length);
  header->content_length(st->remaining);
  st->need_eof = header->need_eof();
  WriteHeaderThen(header, [self = shared_from_this(), st] { self->NextSourcePiece(st); });
}

template void HttpSession<HttpTcpStream>::Send(HttpResponse, unsigned, bool, bool);
template void HttpSession<HttpUnixStream>::Send(HttpResponse, unsigned, bool, bool);
template void HttpSession<HttpTlsStream>::Send(HttpResponse, unsigned, bool, bool);

}  // namespace shoal
