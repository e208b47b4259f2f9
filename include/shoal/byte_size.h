// Byte counts as people read them in messages: "12.0 GiB", "512 B".
#ifndef SHOAL_BYTE_SIZE_H_
#define SHOAL_BYTE_SIZE_H_

#include <cstdint>
#include <string>

namespace shoal {

// Binary units with one decimal above 1 KiB: "0 B", "16.0 MiB", "1.5 TiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace shoal

#endif  // SHOAL_BYTE_SIZE_H_
