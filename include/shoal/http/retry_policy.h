// RetryPolicy: when and how long to wait before trying a request again.
//
// Bounded exponential backoff with full jitter: the wait before retry n is
// uniform in [0, min(max, base * 2^(n-1))]. Only transient failures are
// retried (5xx, 429, S3's SlowDown/RequestTimeout, timeouts, resets, short
// bodies), and only for requests that are safe to repeat; a wrong key or a
// missing bucket fails at once.
//
// Thread-safety: immutable; the jitter source is per thread.
#ifndef SHOAL_HTTP_RETRY_POLICY_H_
#define SHOAL_HTTP_RETRY_POLICY_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace shoal {

class RetryPolicy {
 public:
  RetryPolicy(uint32_t max_attempts, uint32_t base_ms, uint32_t max_ms)
      : max_attempts_(max_attempts), base_ms_(base_ms), max_ms_(max_ms) {}

  uint32_t max_attempts() const { return max_attempts_; }

  // The wait before retry number `retry` (1 = the first retry).
  std::chrono::milliseconds Backoff(uint32_t retry) const;
  // The longest wait Backoff(retry) can return.
  std::chrono::milliseconds BackoffCap(uint32_t retry) const;

  // Whether an HTTP answer is transient: 5xx, 429, or an S3 error code that
  // asks for a retry.
  static bool IsTransientHttp(int status, const std::string& s3_code);

 private:
  uint32_t max_attempts_, base_ms_, max_ms_;
};

}  // namespace shoal

#endif  // SHOAL_HTTP_RETRY_POLICY_H_
