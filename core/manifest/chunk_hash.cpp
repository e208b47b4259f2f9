#include "shoal/chunk_hash.h"

#include "shoal/sha256.h"

namespace shoal {

ChunkId ComputeChunkId(const uint8_t* data, size_t len, uint64_t leaf_width) {
  return ChunkId::From(MerkleRoot(HashBlocks(data, len), leaf_width));
}

bool ChunkIdMatches(const ChunkId& id, const std::vector<Digest>& leaves) {
  uint64_t width = NextPowerOfTwo(leaves.size());
  Digest root = MerkleRoot(leaves, width);
  int height = 0;
  while ((uint64_t{1} << height) < width) ++height;
  Sha256 h;
  for (uint64_t w = width;; w <<= 1) {
    if (ChunkId::From(root) == id) return true;
    if (w >= kMaxPieceSize / kBlockSize) return false;
    root = h.HashPair(root, PadHash(height));
    ++height;
  }
}

}  // namespace shoal
