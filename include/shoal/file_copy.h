// CopyFileRange: bytes from one open file to another, in the kernel where it
// can.
#ifndef SHOAL_FILE_COPY_H_
#define SHOAL_FILE_COPY_H_

#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal {

// Copies `len` bytes of `src` from `src_offset` to `dst` at `dst_offset`.
// copy_file_range lets the kernel copy without bringing the bytes to user
// space, and lets a reflink-capable filesystem (XFS, Btrfs) share extents;
// across filesystems, or where the call is missing, it falls back to
// pread/pwrite. `target` names the destination in errors. A full
// filesystem is NoSpace; a source shorter than `len` is Corruption.
Status CopyFileRange(int src, uint64_t src_offset, int dst, uint64_t dst_offset, uint64_t len,
                     const std::string& target);

}  // namespace shoal

#endif  // SHOAL_FILE_COPY_H_
