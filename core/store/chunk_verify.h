// Checking a chunk file on disk against its ChunkId.
#ifndef SHOAL_CORE_CHUNK_VERIFY_H_
#define SHOAL_CORE_CHUNK_VERIFY_H_

#include <cstdint>
#include <string>

#include "shoal/chunk_id.h"
#include "shoal/status.h"

namespace shoal {

// Reads the whole file behind `fd` (named `path` in messages) and checks
// that it holds exactly `size` bytes whose blocks hash to `id`. Corruption
// on a size or hash mismatch; IOError if it cannot be read. Streams through
// a 1 MiB buffer, so memory does not grow with the chunk.
Status VerifyChunkFile(int fd, const std::string& path, const ChunkId& id, uint64_t size);

// As above, opening `path` first.
Status VerifyChunkPath(const std::string& path, const ChunkId& id, uint64_t size);

}  // namespace shoal

#endif  // SHOAL_CORE_CHUNK_VERIFY_H_
