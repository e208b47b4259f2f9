// The canonical BitTorrent v2 info dictionaries of a version's files, and
// their hashes.
//
// A file larger than one piece is one private, v2-only torrent whose info
// dictionary holds only `file tree`, `meta version`, `name` (the hex pieces
// root), `piece length` and `private`, bencoded with sorted keys.
//
// A small file (not empty, no larger than one piece) has one chunk, whose ID
// is its pieces root, and would cost a whole torrent (announces, a swarm,
// peer connections) for a few bytes. So a version's small files share a few
// torrents, its bundles: BEP 52 lets a v2 torrent hold many files, each
// with its own pieces root, and a piece never crosses a file, so each small
// file is exactly one piece, padded to the piece length. So bundles go by
// size class: files of (L/2, L] bytes share bundles whose piece length is L
// (16 KiB at least, a block), and padding never doubles a file; a bundle
// of tiny files at the version's piece length (16 MiB, say) would pad each
// file to 16 MiB in memory wherever a whole piece is handled. A bundle
// holds about kBundleFiles distinct files at most: libtorrent's work per
// piece grows with the files of its torrent, so one bundle of 10,000 files
// moves several times slower than ten of 1,000. Within a size class, files
// go to bundles by the leading bits of their pieces roots, as few bits as
// keep the average at kBundleFiles or below, so a new version that changes
// one small file changes one bundle. The pieces root does not depend on
// the piece length, so each file's chunk is the same whichever torrent it
// moves in. Each bundle's dictionary is canonical too:
//   - each distinct file appears once (identical files share a piece), named
//     by its hex pieces root, sorted by that name;
//   - `name` is the hex SHA-256 of the sorted raw pieces roots;
//   - `piece length` is BundlePieceLength; `private` and `meta version` as
//     for one file.
// A small file of a version with a bundle moves only in the bundle, for
// pulls and reads alike (a read asks for just its piece).
//
// Peer admission: a cluster that admits peers by certificate (the default)
// passes its peer CA certificate as `peer_ca`, and every dictionary then
// ends with `ssl-cert`, that PEM certificate. This makes each torrent a
// libtorrent SSL torrent: peers speak TLS and must present a certificate
// the CA signed. The CA is part of the info-hash, so one cluster's
// torrents are not another's. An empty `peer_ca` leaves the key out
// (a cluster whose network is trusted).
//
// Everything follows from the manifest and the cluster's CA alone, so
// every agent builds the same torrents for the same content, and the
// tracker can tell which published versions an announced info-hash
// belongs to.
#ifndef SHOAL_FILE_TORRENT_INFO_H_
#define SHOAL_FILE_TORRENT_INFO_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/manifest.h"
#include "shoal/sha256.h"
#include "shoal/status.h"

namespace shoal {

// The bencoded info dictionary of one file's torrent.
// REQUIRES: file.size > 0 (an empty file has no torrent).
std::string FileTorrentInfo(const FileEntry& file, uint32_t piece_size, std::string_view peer_ca);

// SHA-256 of FileTorrentInfo: the torrent's v2 info-hash. BitTorrent
// trackers are sent its first 20 bytes.
// REQUIRES: file.size > 0.
Digest FileTorrentInfoHash(const FileEntry& file, uint32_t piece_size, std::string_view peer_ca);

// Whether `f` is a small file: not empty, and no larger than one piece.
inline bool IsSmallFile(const FileEntry& f, uint32_t piece_size) {
  return f.size > 0 && f.size <= piece_size;
}

// Distinct files per bundle, on average at most.
constexpr size_t kBundleFiles = 1024;

// The bundles of `m`'s small files, each a list of files in the manifest's
// order (identical files share a bundle). A small file alone in its size class (the only distinct
// one) is in none: it moves in its own torrent, as a large file does.
std::vector<std::vector<const FileEntry*>> SmallFileBundles(const Manifest& m);

// The piece length of the bundle of `files`: the smallest power of two that
// holds the largest, and at least 16 KiB.
uint32_t BundlePieceLength(const std::vector<const FileEntry*>& files);

// The piece of each distinct pieces root in the bundle of `files`: roots
// in sorted order, one piece each.
std::map<PiecesRoot, uint64_t> BundlePieces(const std::vector<const FileEntry*>& files);

// Where a version's small files move: its bundles, and each small file's
// bundle and piece there. Points into the manifest it was made from.
struct VersionBundles {
  struct Place {
    size_t bundle = 0;
    uint64_t piece = 0;
  };
  std::vector<std::vector<const FileEntry*>> bundles;  // SmallFileBundles
  std::map<PiecesRoot, Place> places;

  static VersionBundles Of(const Manifest& m);
  // The place of `f`, or null if it moves in its own torrent.
  const Place* Find(const FileEntry& f) const;
};

// The bencoded info dictionary of the bundle of `files`.
// InvalidArgument if there is no file, a file is not small, or two files
// share a pieces root but not a size.
Result<std::string> BundleTorrentInfo(const std::vector<const FileEntry*>& files,
                                      uint32_t piece_size, std::string_view peer_ca);

// Every info-hash a peer may announce for `m`: each non-empty file's
// torrent, and each of its bundles'. A bundle BundleTorrentInfo refuses is
// left out: no agent can build it either.
std::vector<Digest> VersionTorrentHashes(const Manifest& m, std::string_view peer_ca);

}  // namespace shoal

#endif  // SHOAL_FILE_TORRENT_INFO_H_
