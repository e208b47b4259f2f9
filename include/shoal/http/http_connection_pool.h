// HttpConnectionPool: keep-alive connections to one endpoint, reused across
// requests and threads.
//
// Acquire hands a connection to one caller exclusively; Release gives it
// back. Idle connections the server has closed, or that sat unused longer
// than the idle limit, are dropped rather than reused, so a request rarely
// lands on a dead socket. There is no cap on connections in use: the number
// of requests in flight is the number of callers.
//
// Thread-safety: Acquire and Release may be called from any thread.
#ifndef SHOAL_HTTP_HTTP_CONNECTION_POOL_H_
#define SHOAL_HTTP_HTTP_CONNECTION_POOL_H_

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "shoal/http/http_connection.h"

namespace shoal {

class HttpConnectionPool {
 public:
  HttpConnectionPool(HttpEndpoint endpoint, std::shared_ptr<TlsClientContext> tls,
                     HttpTimeouts timeouts, size_t max_idle,
                     std::chrono::milliseconds max_idle_age = std::chrono::seconds(20));

  // An idle connection if one is still good, else a new, unconnected one.
  std::unique_ptr<HttpConnection> Acquire();
  // Keeps `conn` for reuse if it can carry another request.
  void Release(std::unique_ptr<HttpConnection> conn);

  const HttpEndpoint& endpoint() const { return endpoint_; }

 private:
  // Constant after construction.
  const HttpEndpoint endpoint_;
  const std::shared_ptr<TlsClientContext> tls_;
  const HttpTimeouts timeouts_;
  const size_t max_idle_;
  const std::chrono::milliseconds max_idle_age_;

  std::mutex mu_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;  // protected by mu_; newest last
};

}  // namespace shoal

#endif  // SHOAL_HTTP_HTTP_CONNECTION_POOL_H_
