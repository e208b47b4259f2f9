// ChunkId: the name of a chunk, which is its BitTorrent v2 piece hash.
//
// For a piece of a file larger than the piece size, it is the merkle root of
// the piece's 16 KiB block hashes, padded with zero leaves to the piece size.
// For a file no bigger than one piece, its single chunk is named by the
// file's pieces root (leaves padded to the next power of two).
#ifndef SHOAL_CHUNK_ID_H_
#define SHOAL_CHUNK_ID_H_

#include "shoal/hash256.h"

namespace shoal {

struct ChunkIdTag {
  static constexpr const char* kName = "chunk id";
};
using ChunkId = Hash256<ChunkIdTag>;

}  // namespace shoal

#endif  // SHOAL_CHUNK_ID_H_
