// Naming and checking chunk bytes by their ChunkId.
#ifndef SHOAL_CHUNK_HASH_H_
#define SHOAL_CHUNK_HASH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/merkle.h"

namespace shoal {

// The ID of a chunk holding `len` bytes, its tree padded to `leaf_width`
// leaves. For the pieces of a multi-piece file, leaf_width is the piece size
// / 16 KiB; for a single-chunk file, NextPowerOfTwo(BlockCount(len)).
// REQUIRES: leaf_width is a power of two >= BlockCount(len).
ChunkId ComputeChunkId(const uint8_t* data, size_t len, uint64_t leaf_width);

// True if `id` names the chunk whose block hashes are `leaves` under any
// padding width from the smallest that fits up to kMaxPieceSize. The chunk
// store uses this to verify a chunk without knowing which file it came from:
// the extra levels cost at most a dozen 64-byte hashes.
bool ChunkIdMatches(const ChunkId& id, const std::vector<Digest>& leaves);

}  // namespace shoal

#endif  // SHOAL_CHUNK_HASH_H_
