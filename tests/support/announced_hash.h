// The info-hash under which agents announce a file's torrent, computed
// from the file itself, for tests that speak to /announce directly.
#ifndef SHOAL_TESTS_SUPPORT_ANNOUNCED_HASH_H_
#define SHOAL_TESTS_SUPPORT_ANNOUNCED_HASH_H_

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#include "shoal/file_torrent_info.h"
#include "shoal/piece_hasher.h"

namespace shoal::testing {

// The first 20 bytes of the v2 info-hash of the file at `path` hashed at
// `piece_size`, in a cluster whose peer CA is `peer_ca` (empty: plain
// peers), as BitTorrent clients send it. Link libshoal to use it.
inline std::string AnnouncedHash(const std::string& path, uint32_t piece_size,
                                 const std::string& peer_ca) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FileHashes h = HashBuffer(reinterpret_cast<const uint8_t*>(data.data()), data.size(), piece_size);
  FileEntry file;
  file.size = data.size();
  file.pieces_root = h.pieces_root;
  file.piece_layer = h.piece_layer;
  Digest full = FileTorrentInfoHash(file, piece_size, peer_ca);
  return std::string(reinterpret_cast<const char*>(full.data()), 20);
}

// Each byte as %XX, for a query string.
inline std::string PercentEncode(const std::string& bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : bytes) {
    out += '%';
    out += kHex[ch >> 4];
    out += kHex[ch & 15];
  }
  return out;
}

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_ANNOUNCED_HASH_H_
