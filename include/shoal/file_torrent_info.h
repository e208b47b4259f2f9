// The canonical BitTorrent v2 info dictionaries of a version's files, and
// their hashes.
//
// A file larger than one piece is one private, v2-only torrent whose info
// dictionary holds only `file tree`, `meta version`, `name` (the hex pieces
// root), `piece length` and `private`, bencoded with sorted keys.
//
// A small file (not empty, no larger than one piece) has one chunk, whose ID
// is its pieces root, and would cost a whole torrent (announces, a swarm,
// peer connections) for a few bytes. So a version's small files also share
// one torrent, its bundle: BEP 52 lets a v2 torrent hold many files, each
// with its own pieces root, and a piece never crosses a file, so each small
// file is exactly one piece. The bundle's dictionary is canonical too:
//   - each distinct file appears once (identical files share a piece), named
//     by its hex pieces root, sorted by that name;
//   - `name` is the hex SHA-256 of the sorted raw pieces roots;
//   - `piece length`, `private` and `meta version` as for one file.
// A small file keeps its own torrent as well, for reads of that one file.
//
// Everything follows from the manifest alone, so every agent builds the
// same torrents for the same content, and the tracker can tell which
// published versions an announced info-hash belongs to.
#ifndef SHOAL_FILE_TORRENT_INFO_H_
#define SHOAL_FILE_TORRENT_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/manifest.h"
#include "shoal/sha256.h"
#include "shoal/status.h"

namespace shoal {

// The bencoded info dictionary of one file's torrent.
// REQUIRES: file.size > 0 (an empty file has no torrent).
std::string FileTorrentInfo(const FileEntry& file, uint32_t piece_size);

// SHA-256 of FileTorrentInfo: the torrent's v2 info-hash. BitTorrent
// trackers are sent its first 20 bytes.
// REQUIRES: file.size > 0.
Digest FileTorrentInfoHash(const FileEntry& file, uint32_t piece_size);

// Whether `f` is a small file: not empty, and no larger than one piece.
inline bool IsSmallFile(const FileEntry& f, uint32_t piece_size) {
  return f.size > 0 && f.size <= piece_size;
}

// The files of `m` that go into its bundle: every small file, when there
// are at least two distinct ones. Fewer, and the result is empty: one small
// file is served by its own torrent alone.
std::vector<const FileEntry*> BundledFiles(const Manifest& m);

// The bencoded info dictionary of the bundle of `files`.
// InvalidArgument if there is no file, a file is not small, or two files
// share a pieces root but not a size.
Result<std::string> BundleTorrentInfo(const std::vector<const FileEntry*>& files, uint32_t piece_size);

// Every info-hash a peer may announce for `m`: each non-empty file's
// torrent, and its bundle's if it has one. A bundle BundleTorrentInfo
// refuses is left out: no agent can build it either.
std::vector<Digest> VersionTorrentHashes(const Manifest& m);

}  // namespace shoal

#endif  // SHOAL_FILE_TORRENT_INFO_H_
