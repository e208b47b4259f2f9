// BundleMetainfo: the one torrent shared by a version's small files.
//
// Its info dictionary is core's canonical bundle (shoal/file_torrent_info.h):
// each distinct small file is one piece, and piece i's chunk is file i's
// pieces root. Files larger than one piece keep their own canonical torrent
// (torrent_metainfo.h), which versions share. No file needs a piece layer
// (BEP 52 has none for a file of one piece).
#ifndef SHOAL_AGENT_P2P_BUNDLE_METAINFO_H_
#define SHOAL_AGENT_P2P_BUNDLE_METAINFO_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "p2p/torrent_metainfo.h"
#include "shoal/file_torrent_info.h"
#include "shoal/manifest.h"
#include "shoal/status.h"

namespace shoal {

// The bundle of `files`, small at the version's `piece_size`. Its `chunks`
// are the distinct pieces roots in piece order, `piece_bytes` their files'
// sizes, and its `piece_size` BundlePieceLength(files).
// InvalidArgument if there is no file, a file is not small, or two files
// share a pieces root but not a size. `peer_ca` as for BuildTorrentMetainfo.
Result<TorrentMetainfo> BuildBundleMetainfo(const std::vector<const FileEntry*>& files,
                                            uint32_t piece_size, std::string_view peer_ca);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_BUNDLE_METAINFO_H_
