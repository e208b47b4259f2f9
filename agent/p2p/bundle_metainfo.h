// BundleMetainfo: the one torrent shared by a version's small files.
//
// A file no larger than one piece has one chunk, whose ID is its pieces
// root, and costs a whole torrent (an announce every interval, a swarm, peer
// connections) for a few bytes. A version of 10,000 such files would run
// 10,000 torrents forever. So a version's small files share one private,
// v2-only torrent: BEP 52 lets a v2 torrent hold many files, each with its
// own pieces root, and a piece never crosses a file, so each small file is
// exactly one piece, and piece i's chunk is file i's pieces root. Files
// larger than one piece keep their own canonical torrent (torrent_metainfo.h),
// which versions share.
//
// The info dictionary is canonical, so every agent builds the same
// info-hash for the same set of small files, whichever version, publisher
// or file order they come from:
//   - each distinct file appears once (identical files share a piece), named
//     by its hex pieces root, and files are sorted by that name;
//   - `name` is the hex SHA-256 of the sorted raw pieces roots;
//   - `piece length` is the version's piece size; `private` is 1, `meta
//     version` 2, and there are no other fields (no paths, no v1 hashes).
// No file needs a piece layer (BEP 52 has none for a file of one piece).
#ifndef SHOAL_AGENT_P2P_BUNDLE_METAINFO_H_
#define SHOAL_AGENT_P2P_BUNDLE_METAINFO_H_

#include <cstdint>
#include <vector>

#include "p2p/torrent_metainfo.h"
#include "shoal/manifest.h"
#include "shoal/status.h"

namespace shoal {

// Whether `f` is a small file: not empty, and no larger than one piece.
inline bool IsSmallFile(const FileEntry& f, uint32_t piece_size) {
  return f.size > 0 && f.size <= piece_size;
}

// The files of `m` that go into its bundle: every small file, when there
// are at least two distinct ones. Fewer, and each small file keeps its own
// (canonical, shareable) torrent: the result is empty.
std::vector<const FileEntry*> BundledFiles(const Manifest& m);

// The bundle of `files` at `piece_size`. Its `chunks` are the distinct
// pieces roots in piece order, and `piece_bytes` their files' sizes.
// InvalidArgument if there is no file, a file is not small, or two files
// share a pieces root but not a size.
Result<TorrentMetainfo> BuildBundleMetainfo(const std::vector<const FileEntry*>& files,
                                            uint32_t piece_size);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_BUNDLE_METAINFO_H_
