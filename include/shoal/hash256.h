// Hash256<Tag>: a 32-byte SHA-256 value with a type of its own per meaning.
//
// ChunkId, PiecesRoot and VersionId are all SHA-256 digests, but they name
// different things; the Tag keeps one from being passed where another is
// expected. Values are plain bytes: cheap to copy, ordered, hashable.
#ifndef SHOAL_HASH256_H_
#define SHOAL_HASH256_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "shoal/hex.h"
#include "shoal/status.h"

namespace shoal {

template <typename Tag>
class Hash256 {
 public:
  static constexpr size_t kSize = 32;

  // The all-zero value; also what an empty file's pieces root is.
  Hash256() { bytes_.fill(0); }

  static Hash256 FromBytes(const uint8_t* bytes) {
    Hash256 h;
    std::memcpy(h.bytes_.data(), bytes, kSize);
    return h;
  }

  // Parses 64 hex digits. Anything else is InvalidArgument.
  static Result<Hash256> ParseHex(std::string_view text) {
    Hash256 h;
    if (!hex::Decode(text, h.bytes_.data(), kSize)) {
      return Status::InvalidArgument(std::string(Tag::kName) + " must be 64 hex digits, got '" +
                                     std::string(text.substr(0, 80)) + "'");
    }
    return h;
  }

  template <typename OtherTag>
  static Hash256 From(const Hash256<OtherTag>& other) {
    return FromBytes(other.data());
  }

  const uint8_t* data() const { return bytes_.data(); }
  uint8_t* mutable_data() { return bytes_.data(); }
  std::string ToHex() const { return hex::Encode(bytes_.data(), kSize); }
  // The first 12 hex digits, for logs and progress lines.
  std::string ShortHex() const { return ToHex().substr(0, 12); }
  bool IsZero() const {
    for (uint8_t b : bytes_) {
      if (b != 0) return false;
    }
    return true;
  }

  friend bool operator==(const Hash256& a, const Hash256& b) { return a.bytes_ == b.bytes_; }
  friend bool operator!=(const Hash256& a, const Hash256& b) { return a.bytes_ != b.bytes_; }
  friend bool operator<(const Hash256& a, const Hash256& b) { return a.bytes_ < b.bytes_; }

 private:
  std::array<uint8_t, kSize> bytes_;
};

// A digest with no domain meaning: a merkle node, a block hash.
struct DigestTag {
  static constexpr const char* kName = "digest";
};
using Digest = Hash256<DigestTag>;

}  // namespace shoal

namespace std {
template <typename Tag>
struct hash<shoal::Hash256<Tag>> {
  size_t operator()(const shoal::Hash256<Tag>& h) const noexcept {
    size_t v;
    std::memcpy(&v, h.data(), sizeof(v));  // already uniformly distributed
    return v;
  }
};
}  // namespace std

#endif  // SHOAL_HASH256_H_
