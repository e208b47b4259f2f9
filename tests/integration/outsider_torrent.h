// The .torrent an outsider needs to ask an agent for a published file: the
// peer admission tests hand it to clients that are not cluster members.
#ifndef SHOAL_TESTS_INTEGRATION_OUTSIDER_TORRENT_H_
#define SHOAL_TESTS_INTEGRATION_OUTSIDER_TORRENT_H_

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#include "p2p/torrent_metainfo.h"
#include "shoal/piece_hasher.h"

namespace shoal::testing {

// The .torrent agents serve for the file at `path`, published with pieces
// of `piece_size`, in a cluster whose torrents carry the CA `ca` ("" for
// plain torrents: `auth` and `off`), written to `out`.
inline std::string WriteTorrent(const std::string& path, uint32_t piece_size, const std::string& ca,
                                const std::string& out) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FileHashes h = HashBuffer(reinterpret_cast<const uint8_t*>(data.data()), data.size(), piece_size);
  FileEntry file;
  file.path = "model.bin";
  file.size = data.size();
  file.pieces_root = h.pieces_root;
  file.piece_layer = h.piece_layer;
  auto meta = BuildTorrentMetainfo(file, piece_size, ca);
  REQUIRE(meta.ok());
  std::ofstream(out, std::ios::binary) << meta->torrent;
  return out;
}

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_INTEGRATION_OUTSIDER_TORRENT_H_
