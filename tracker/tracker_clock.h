// The tracker's wall clock, in milliseconds since the Unix epoch.
#ifndef SHOAL_TRACKER_TRACKER_CLOCK_H_
#define SHOAL_TRACKER_TRACKER_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace shoal::tracker {

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TRACKER_CLOCK_H_
