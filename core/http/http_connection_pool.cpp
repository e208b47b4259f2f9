#include "shoal/http/http_connection_pool.h"

namespace shoal {

HttpConnectionPool::HttpConnectionPool(HttpEndpoint endpoint, std::shared_ptr<TlsClientContext> tls,
                                       HttpTimeouts timeouts, size_t max_idle,
                                       std::chrono::milliseconds max_idle_age)
    : endpoint_(std::move(endpoint)),
      tls_(std::move(tls)),
      timeouts_(timeouts),
      max_idle_(max_idle),
      max_idle_age_(max_idle_age) {}

std::unique_ptr<HttpConnection> HttpConnectionPool::Acquire() {
  const auto now = std::chrono::steady_clock::now();
  for (;;) {
    std::unique_ptr<HttpConnection> conn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.empty()) break;
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
    // Checked outside the lock: a peek is a system call.
    if (now - conn->last_used() < max_idle_age_ && conn->StillOpen()) return conn;
  }
  return std::make_unique<HttpConnection>(endpoint_, tls_, timeouts_);
}

void HttpConnectionPool::Release(std::unique_ptr<HttpConnection> conn) {
  if (!conn || !conn->reusable()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(conn));
}

}  // namespace shoal
