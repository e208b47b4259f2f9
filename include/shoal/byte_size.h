// Byte counts as people read them in messages: "12.0 GiB", "512 B".
#ifndef SHOAL_BYTE_SIZE_H_
#define SHOAL_BYTE_SIZE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// Binary units with one decimal above 1 KiB: "0 B", "16.0 MiB", "1.5 TiB".
std::string FormatBytes(uint64_t bytes);

// Parses "200GiB", "512MiB", "64KiB", "1TiB", "10GB" (decimal), or a plain
// byte count. InvalidArgument otherwise, or above 2^62.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace shoal

#endif  // SHOAL_BYTE_SIZE_H_
