// Wall-clock time as Unix milliseconds, and its RFC 3339 UTC text form.
#ifndef SHOAL_UTC_TIME_H_
#define SHOAL_UTC_TIME_H_

#include <cstdint>
#include <string>

namespace shoal {

// Milliseconds since the Unix epoch, from the system clock: the one wall
// clock that timestamps, leases, token expiry and cache access times read.
int64_t NowMs();

// "2026-11-29T18:00:00.123Z". Times before 1970 or after 9999 are clamped.
std::string FormatUtcMillis(int64_t unix_ms);

}  // namespace shoal

#endif  // SHOAL_UTC_TIME_H_
