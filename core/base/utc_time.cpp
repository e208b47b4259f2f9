#include "shoal/utc_time.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace shoal {

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string FormatUtcMillis(int64_t unix_ms) {
  constexpr int64_t kMaxMs = 253402300799999;  // 9999-12-31T23:59:59.999Z
  if (unix_ms < 0) unix_ms = 0;
  if (unix_ms > kMaxMs) unix_ms = kMaxMs;
  time_t secs = time_t(unix_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, int(unix_ms % 1000));
  return buf;
}

}  // namespace shoal
