// HttpConnection: one keep-alive HTTP/1.1 connection, plain or TLS, that
// runs one request at a time with a timeout on every step.
//
// Beast and Asio stay inside http_connection.cpp; this header is plain C++.
// Each connection drives its own io_context on the calling thread, so a call
// blocks like a system call yet every read and write is bounded by the
// configured timeout.
//
// Thread-safety: a connection is used by one thread at a time (the pool
// hands it out exclusively).
#ifndef SHOAL_HTTP_HTTP_CONNECTION_H_
#define SHOAL_HTTP_HTTP_CONNECTION_H_

#include <chrono>
#include <memory>
#include <string>

#include "shoal/byte_stream.h"
#include "shoal/http/http_types.h"
#include "shoal/status.h"

namespace shoal {

// The client side of TLS: trust store and whether to verify. Shared by all
// connections of one origin; immutable once made.
class TlsClientContext {
 public:
  // Verifies against `ca_file` (PEM) if given, else the system store.
  static Result<std::shared_ptr<TlsClientContext>> Make(bool verify, const std::string& ca_file);
  ~TlsClientContext();
  bool verify() const { return verify_; }
  void* native() const;  // the asio::ssl::context

 private:
  TlsClientContext() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool verify_ = true;
};

// How an exchange went, beyond its Status.
struct ExchangeInfo {
  bool sent_any = false;      // some request bytes reached the socket
  bool got_response = false;  // a status line and headers arrived
  bool sink_failed = false;   // the status came from the caller's sink
  bool retryable = false;     // a transport failure worth retrying (reset, timeout, short body)
  uint64_t body_bytes = 0;    // body bytes delivered to the sink
};

class HttpConnection {
 public:
  // `tls` must be non-null iff endpoint.tls.
  HttpConnection(const HttpEndpoint& endpoint, std::shared_ptr<TlsClientContext> tls,
                 const HttpTimeouts& timeouts);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Connects first if needed. Sends `request`; reads the response. A 2xx
  // body goes to `sink` (if given) as it arrives; any other body is kept in
  // response->body (up to 64 KiB). For HEAD requests no body is read.
  // A non-OK status means the transport failed; *info says how far it got.
  Status Exchange(const OriginHttpRequest& request, ByteSink* sink, OriginHttpResponse* response,
                  ExchangeInfo* info);

  // Whether the connection may carry another request.
  bool reusable() const;
  // False if the peer has closed an idle connection (non-blocking peek).
  bool StillOpen() const;
  std::chrono::steady_clock::time_point last_used() const { return last_used_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::chrono::steady_clock::time_point last_used_;
};

}  // namespace shoal

#endif  // SHOAL_HTTP_HTTP_CONNECTION_H_
