#include "p2p/bundle_metainfo.h"

#include <map>

#include "shoal/piece_hasher.h"
#include "shoal/sha256.h"

namespace shoal {

Result<TorrentMetainfo> BuildBundleMetainfo(const std::vector<const FileEntry*>& files,
                                            uint32_t piece_size, std::string_view peer_ca) {
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(piece_size));
  auto info = BundleTorrentInfo(files, piece_size, peer_ca);
  if (!info.ok()) return info.status();
  std::map<PiecesRoot, uint64_t> sizes;  // the dictionary's order: sorted by root
  for (const FileEntry* f : files) sizes.emplace(f->pieces_root, f->size);

  TorrentMetainfo m;
  m.info = std::move(info).value();
  m.id = FileTorrentId::From(Sha256::Of(m.info.data(), m.info.size()));
  m.piece_size = BundlePieceLength(files);
  for (const auto& [root, size] : sizes) {
    m.chunks.push_back(ChunkId::From(root));
    m.piece_bytes.push_back(size);
    m.file_size += size;
  }
  m.torrent = "d4:info" + m.info + "e";
  return m;
}

}  // namespace shoal
