#include "p2p/bundle_metainfo.h"

#include <map>

#include "p2p/bencode_writer.h"
#include "shoal/piece_hasher.h"
#include "shoal/sha256.h"

namespace shoal {

std::vector<const FileEntry*> BundledFiles(const Manifest& m) {
  std::vector<const FileEntry*> out;
  std::map<PiecesRoot, bool> distinct;
  for (const FileEntry& f : m.files) {
    if (!IsSmallFile(f, m.piece_size)) continue;
    out.push_back(&f);
    distinct[f.pieces_root] = true;
  }
  if (distinct.size() < 2) out.clear();
  return out;
}

Result<TorrentMetainfo> BuildBundleMetainfo(const std::vector<const FileEntry*>& files,
                                            uint32_t piece_size) {
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(piece_size));
  if (files.empty()) return Status::InvalidArgument("a bundle needs at least one small file");
  std::map<PiecesRoot, uint64_t> sizes;  // sorted: the canonical order
  for (const FileEntry* f : files) {
    if (!IsSmallFile(*f, piece_size)) {
      return Status::InvalidArgument("file '" + f->path + "' of " + std::to_string(f->size) +
                                     " bytes does not belong in a bundle at piece size " +
                                     std::to_string(piece_size) + ": only files of one piece do");
    }
    auto [it, added] = sizes.emplace(f->pieces_root, f->size);
    if (!added && it->second != f->size) {
      return Status::InvalidArgument(
          "file '" + f->path + "' has pieces root " + f->pieces_root.ShortHex() +
          " of another file, with another size; the manifest is inconsistent");
    }
  }

  Sha256 name_hash;
  for (const auto& [root, size] : sizes) name_hash.Update(root.data(), PiecesRoot::kSize);
  const std::string name = name_hash.Finish().ToHex();

  BencodeWriter info;
  info.BeginDict();
  info.Bytes("file tree");
  info.BeginDict();
  for (const auto& [root, size] : sizes) {
    info.Bytes(root.ToHex());
    info.BeginDict();
    info.Bytes("");
    info.BeginDict();
    info.Bytes("length");
    info.Int(static_cast<int64_t>(size));
    info.Bytes("pieces root");
    info.Bytes(std::string_view(reinterpret_cast<const char*>(root.data()), PiecesRoot::kSize));
    info.End();
    info.End();
  }
  info.End();
  info.Bytes("meta version");
  info.Int(2);
  info.Bytes("name");
  info.Bytes(name);
  info.Bytes("piece length");
  info.Int(piece_size);
  info.Bytes("private");
  info.Int(1);
  info.End();

  TorrentMetainfo m;
  m.info = info.Take();
  m.id = FileTorrentId::From(Sha256::Of(m.info.data(), m.info.size()));
  m.piece_size = piece_size;
  for (const auto& [root, size] : sizes) {
    m.chunks.push_back(ChunkId::From(root));
    m.piece_bytes.push_back(size);
    m.file_size += size;
  }
  m.torrent = "d4:info" + m.info + "e";
  return m;
}

}  // namespace shoal
