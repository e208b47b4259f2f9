// HTTP requests and responses as handlers see them: plain values with no
// trace of the server library underneath.
//
// Thread-safety: like any value, safe to read from many threads, to change
// from one. An HttpFileBody is immutable and may be shared freely.
#ifndef SHOAL_SERVER_HTTP_MESSAGE_H_
#define SHOAL_SERVER_HTTP_MESSAGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/http_headers.h"
#include "shoal/status.h"

namespace shoal {

struct HttpRequest {
  std::string method;                        // "GET", "HEAD", "POST", ...
  std::string target;                        // as sent: "/v1/a%20b?x=1"
  std::string path;                          // percent-decoded: "/v1/a b"
  std::map<std::string, std::string> query;  // decoded; the last of repeated keys wins
  HttpHeaders headers;
  std::string body;
  std::string remote_address;  // "127.0.0.1:53122"

  // The token of an "Authorization: Bearer <token>" header, or nullopt.
  std::optional<std::string> BearerToken() const;
};

// A region of an open file sent as a response body with sendfile(2), without
// loading it into memory. Either owns the descriptor and closes it when the
// last reference goes, or borrows it from `owner`, which it keeps alive
// until then (a chunk span that also holds a pin, say).
class HttpFileBody {
 public:
  // REQUIRES: `fd` is open for reading; [offset, offset + length) lies within
  // the file (a file that shrinks meanwhile aborts the connection).
  HttpFileBody(int fd, uint64_t offset, uint64_t length)
      : fd_(fd), offset_(offset), length_(length) {}
  HttpFileBody(int fd, uint64_t offset, uint64_t length, std::shared_ptr<void> owner)
      : fd_(fd), offset_(offset), length_(length), owner_(std::move(owner)) {}
  ~HttpFileBody();
  HttpFileBody(const HttpFileBody&) = delete;
  HttpFileBody& operator=(const HttpFileBody&) = delete;

  int fd() const { return fd_; }
  uint64_t offset() const { return offset_; }
  uint64_t length() const { return length_; }

 private:
  const int fd_;
  const uint64_t offset_;
  const uint64_t length_;
  const std::shared_ptr<void> owner_;  // null: fd_ is ours to close
};

// One piece of a body from an HttpBodySource: bytes, or a file region.
struct HttpBodyPiece {
  std::string bytes;                         // sent as they are, when `file` is null
  std::shared_ptr<const HttpFileBody> file;  // sent with sendfile(2)
};

// A body whose pieces become available over time (bytes still arriving from
// elsewhere), delivered without holding a thread while it waits.
//
// The server calls Next() for one piece at a time, after the previous one
// is sent, until the response's stream_length bytes have gone. Next()
// returns at once and calls `ready` exactly once, from any thread: with a
// non-empty piece, or with an error, which aborts the connection. A source
// is dropped without further calls when its client goes away.
// REQUIRES: every pending `ready` is called or destroyed before the server
// stops, since it holds the connection.
class HttpBodySource {
 public:
  using Ready = std::function<void(Result<HttpBodyPiece>)>;
  virtual ~HttpBodySource() = default;
  virtual void Next(Ready ready) = 0;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;  // Content-Length is set by the server
  std::string body;
  // When set, sent instead of `body`.
  std::shared_ptr<const HttpFileBody> file;
  // When set (and `file` is not), the body is produced piece by piece on a
  // worker thread, off the I/O threads: each call stores the next piece in
  // *piece and returns true, or returns false at the end. The body is sent
  // chunked unless stream_length says how long it is. A producer that throws,
  // or that produces more or less than stream_length, aborts the connection.
  // Never called for HEAD. Stop() waits for a running producer, so a
  // producer must not block indefinitely.
  std::function<bool(std::string* piece)> stream;
  // When set (and `file` and `stream` are not), the body comes from this
  // source, stream_length bytes of it. REQUIRES: stream_length >= 0.
  std::shared_ptr<HttpBodySource> source;
  int64_t stream_length = -1;  // bytes, or -1 if unknown

  static HttpResponse Text(int status, std::string body);  // text/plain; charset=utf-8
  static HttpResponse Json(int status, std::string body);  // application/json
  // {"error":"<message>"} with the given status.
  static HttpResponse Error(int status, std::string_view message);
  // The error response for a non-OK Status, with HttpStatusFor(code).
  static HttpResponse FromStatus(const Status& status);
};

// The one mapping from Status codes to HTTP statuses: NotFound 404,
// InvalidArgument 400, Unauthenticated 401 (FromStatus adds
// "WWW-Authenticate: Bearer"), PermissionDenied 403, AlreadyExists 409,
// Unavailable 503, NoSpace 507, anything else 500.
int HttpStatusFor(Status::Code code);

// The standard reason phrase, "Not Found" for 404; "" when unknown.
const char* HttpReason(int status);

// Splits a request target ("/a%20b?x=1") into req->path and req->query,
// percent-decoded; false if it does not start with '/' or has a malformed
// %-escape. The server does this for every request; it is public for
// requests that arrive by other means (an announce relayed over RPC).
bool ParseTarget(std::string_view target, HttpRequest* req);

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_MESSAGE_H_
