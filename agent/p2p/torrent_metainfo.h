// TorrentMetainfo: the .torrent of one file, built from its manifest entry
// without reading the file.
//
// Each file is one private, v2-only torrent whose info dictionary is
// FileTorrentInfo (shoal/file_torrent_info.h), so identical files give
// identical info-hashes whichever model or publisher they come from, and
// the tracker can compute them too. The piece layer travels beside it in
// `piece layers`; trackers are not part of it.
#ifndef SHOAL_AGENT_P2P_TORRENT_METAINFO_H_
#define SHOAL_AGENT_P2P_TORRENT_METAINFO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "p2p/file_torrent_id.h"
#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/status.h"

namespace shoal {

struct TorrentMetainfo {
  FileTorrentId id;             // SHA-256 of `info`
  std::string info;             // the bencoded info dictionary
  std::string torrent;          // the whole bencoded .torrent
  uint64_t file_size = 0;       // bytes
  uint32_t piece_size = 0;      // bytes
  std::vector<ChunkId> chunks;  // one per piece, in order
  // Bytes per piece, for a bundle of small files (bundle_metainfo.h); empty
  // for one file, whose pieces are piece_size bytes but the last.
  std::vector<uint64_t> piece_bytes;
};

// `peer_ca` is the cluster's peer CA, or empty for plain peers (see
// shoal/file_torrent_info.h).
// InvalidArgument for an empty file, a bad piece size, or a piece layer
// whose length does not match the file size.
Result<TorrentMetainfo> BuildTorrentMetainfo(const FileEntry& file, uint32_t piece_size,
                                             std::string_view peer_ca);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_TORRENT_METAINFO_H_
