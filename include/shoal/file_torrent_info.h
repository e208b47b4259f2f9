// The canonical BitTorrent v2 info dictionary of one file, and its hash.
//
// Each file is one private, v2-only torrent whose info dictionary holds
// only `file tree`, `meta version`, `name` (the hex pieces root), `piece
// length` and `private`, bencoded with sorted keys. It follows from the
// manifest entry alone, so every agent builds the same torrent for the same
// file and piece size, and the tracker can tell which published files an
// announced info-hash belongs to.
#ifndef SHOAL_FILE_TORRENT_INFO_H_
#define SHOAL_FILE_TORRENT_INFO_H_

#include <cstdint>
#include <string>

#include "shoal/manifest.h"
#include "shoal/sha256.h"

namespace shoal {

// The bencoded info dictionary.
// REQUIRES: file.size > 0 (an empty file has no torrent).
std::string FileTorrentInfo(const FileEntry& file, uint32_t piece_size);

// SHA-256 of FileTorrentInfo: the torrent's v2 info-hash. BitTorrent
// trackers are sent its first 20 bytes.
// REQUIRES: file.size > 0.
Digest FileTorrentInfoHash(const FileEntry& file, uint32_t piece_size);

}  // namespace shoal

#endif  // SHOAL_FILE_TORRENT_INFO_H_
