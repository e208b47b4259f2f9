#include "shoal/file_torrent_info.h"

#include <cassert>

namespace shoal {
namespace {

void Bytes(const std::string& s, std::string* out) { *out += std::to_string(s.size()) + ":" + s; }
void Int(int64_t v, std::string* out) { *out += "i" + std::to_string(v) + "e"; }

}  // namespace

std::string FileTorrentInfo(const FileEntry& file, uint32_t piece_size) {
  assert(file.size > 0);
  const std::string root_hex = file.pieces_root.ToHex();
  const std::string root_raw(reinterpret_cast<const char*>(file.pieces_root.data()),
                             PiecesRoot::kSize);
  // Keys in sorted order, as bencoding requires.
  std::string out = "d";
  Bytes("file tree", &out);
  out += "d";
  Bytes(root_hex, &out);
  out += "d";
  Bytes("", &out);
  out += "d";
  Bytes("length", &out);
  Int(static_cast<int64_t>(file.size), &out);
  Bytes("pieces root", &out);
  Bytes(root_raw, &out);
  out += "eee";
  Bytes("meta version", &out);
  Int(2, &out);
  Bytes("name", &out);
  Bytes(root_hex, &out);
  Bytes("piece length", &out);
  Int(piece_size, &out);
  Bytes("private", &out);
  Int(1, &out);
  return out + "e";
}

Digest FileTorrentInfoHash(const FileEntry& file, uint32_t piece_size) {
  std::string info = FileTorrentInfo(file, piece_size);
  return Sha256::Of(info.data(), info.size());
}

}  // namespace shoal
