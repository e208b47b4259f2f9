#include "shoal/http/retry_policy.h"

#include <algorithm>
#include <random>

namespace shoal {

std::chrono::milliseconds RetryPolicy::BackoffCap(uint32_t retry) const {
  uint64_t cap = base_ms_;
  for (uint32_t i = 1; i < retry && cap < max_ms_; ++i) cap *= 2;
  return std::chrono::milliseconds(std::min<uint64_t>(cap, max_ms_));
}

std::chrono::milliseconds RetryPolicy::Backoff(uint32_t retry) const {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t cap = static_cast<uint64_t>(BackoffCap(retry).count());
  std::uniform_int_distribution<uint64_t> dist(0, cap);
  return std::chrono::milliseconds(dist(rng));
}

bool RetryPolicy::IsTransientHttp(int status, const std::string& s3_code) {
  if (status >= 500 && status <= 599 && s3_code != "NotImplemented") return true;
  if (status == 429) return true;
  // RequestTimeTooSkewed is not here: the same clock would sign the retry.
  return s3_code == "SlowDown" || s3_code == "RequestTimeout" || s3_code == "InternalError";
}

}  // namespace shoal
