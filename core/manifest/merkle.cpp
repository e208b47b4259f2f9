#include "shoal/merkle.h"

#include <array>
#include <cassert>

#include "shoal/sha256.h"

namespace shoal {

uint64_t NextPowerOfTwo(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

bool IsPowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

const Digest& PadHash(int height) {
  // 64 levels cover any tree Shoal can build; computed once, read-only after.
  static const std::array<Digest, 64> kPads = [] {
    std::array<Digest, 64> pads;
    Sha256 h;
    for (size_t i = 1; i < pads.size(); ++i) pads[i] = h.HashPair(pads[i - 1], pads[i - 1]);
    return pads;
  }();
  assert(height >= 0 && height < 64);
  return kPads[static_cast<size_t>(height)];
}

Digest MerkleRoot(std::vector<Digest> leaves, uint64_t width, int pad_height) {
  assert(IsPowerOfTwo(width) && leaves.size() <= width);
  Sha256 h;
  int height = pad_height;
  size_t n = leaves.size();
  if (n == 0) {
    // An all-padding tree.
    int levels = 0;
    while ((uint64_t{1} << levels) < width) ++levels;
    return PadHash(pad_height + levels);
  }
  for (uint64_t level_width = width; level_width > 1; level_width >>= 1, ++height) {
    if (n % 2 == 1) {
      leaves.resize(n + 1);
      leaves[n] = PadHash(height);
      ++n;
    }
    for (size_t i = 0; i < n / 2; ++i) leaves[i] = h.HashPair(leaves[2 * i], leaves[2 * i + 1]);
    n /= 2;
  }
  return leaves[0];
}

std::vector<Digest> HashBlocks(const uint8_t* data, size_t len) {
  std::vector<Digest> out;
  out.reserve(BlockCount(len));
  Sha256 h;
  for (size_t off = 0; off < len; off += kBlockSize) {
    size_t n = len - off < kBlockSize ? len - off : kBlockSize;
    out.push_back(h.Hash(data + off, n));
  }
  return out;
}

}  // namespace shoal
