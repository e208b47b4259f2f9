// HttpSession's bodies from an HttpBodySource (http_session_impl.h): the
// source's pieces one after another, bytes written as they are, file
// regions sent by sendfile(2) straight to the socket or, with TLS, read
// and written in slices; and the idle timeout while sendfile waits for the
// socket.
#include <sys/sendfile.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "server/http_session_impl.h"
#include "shoal/log.h"
#include "shoal/posix_file.h"

namespace shoal {
namespace {

namespace beast = boost::beast;

}  // namespace

template <class Transport>
void HttpSession<Transport>::NextSourcePiece(std::shared_ptr<Source> st) {
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

template <class Transport>
void HttpSession<Transport>::WriteSourcePiece(std::shared_ptr<Source> st,
                                              Result<HttpBodyPiece> piece) {
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
template <class Transport>
void HttpSession<Transport>::SendFileThroughTls(std::shared_ptr<Source> st) {
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
template <class Transport>
void HttpSession<Transport>::SendFileSome(std::shared_ptr<Source> st) {
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

template <class Transport>
void HttpSession<Transport>::WaitWritable(std::shared_ptr<Source> st) {
  if (!send_timer_armed_) ArmSendTimer(options_.idle_timeout);
  Lowest().socket().async_wait(boost::asio::socket_base::wait_write,
                               [self = shared_from_this(), st](beast::error_code ec) {
                                 if (ec) return self->Close();
                                 self->SendFileSome(st);
                               });
}

// One timer per connection, not one per wait: it closes the connection
// once nothing has been sent for the idle timeout while sendfile waits.
template <class Transport>
void HttpSession<Transport>::ArmSendTimer(std::chrono::steady_clock::duration after) {
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

template void HttpSession<HttpTcpStream>::NextSourcePiece(std::shared_ptr<Source>);
template void HttpSession<HttpUnixStream>::NextSourcePiece(std::shared_ptr<Source>);
template void HttpSession<HttpTlsStream>::NextSourcePiece(std::shared_ptr<Source>);

}  // namespace shoal
