// BEP 52 merkle trees over 16 KiB blocks.
//
// Leaves are SHA-256 digests of 16 KiB blocks (the last block of a file is
// hashed as it is, not padded). A tree is padded to a power-of-two width with
// zero leaves; a padded subtree's hash is the hash of its zero leaves, not
// zero itself.
#ifndef SHOAL_MERKLE_H_
#define SHOAL_MERKLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shoal/hash256.h"

namespace shoal {

constexpr uint32_t kBlockSize = 16 * 1024;
// The largest piece size Shoal accepts, and so the widest chunk tree.
constexpr uint32_t kMaxPieceSize = 64u << 20;
constexpr uint32_t kMinPieceSize = kBlockSize;

// Smallest power of two >= n (1 for n == 0).
uint64_t NextPowerOfTwo(uint64_t n);
bool IsPowerOfTwo(uint64_t n);

// Number of 16 KiB blocks in `len` bytes, rounding up.
inline uint64_t BlockCount(uint64_t len) { return (len + kBlockSize - 1) / kBlockSize; }

// Hash of a perfect subtree of 2^height zero leaves. height 0 is the zero leaf.
const Digest& PadHash(int height);

// Root of `leaves` padded to `width` leaves (a power of two >= leaves.size())
// with the pad subtree of `pad_height` at the base. Consumes `leaves`.
// With pad_height 0 this is the root of a block tree; with pad_height
// log2(piece/16 KiB) and piece hashes as leaves, the file's pieces root.
Digest MerkleRoot(std::vector<Digest> leaves, uint64_t width, int pad_height = 0);

// Leaf hashes of the 16 KiB blocks of a buffer.
std::vector<Digest> HashBlocks(const uint8_t* data, size_t len);

}  // namespace shoal

#endif  // SHOAL_MERKLE_H_
