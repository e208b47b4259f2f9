#include "p2p/torrent_metainfo.h"

#include "shoal/bencode_writer.h"
#include "shoal/file_torrent_info.h"
#include "shoal/piece_hasher.h"
#include "shoal/sha256.h"

namespace shoal {

namespace {

std::string RawBytes(const uint8_t* data, size_t len) {
  return std::string(reinterpret_cast<const char*>(data), len);
}

}  // namespace

Result<TorrentMetainfo> BuildTorrentMetainfo(const FileEntry& file, uint32_t piece_size,
                                             std::string_view peer_ca) {
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(piece_size));
  if (file.size == 0) {
    return Status::InvalidArgument("file '" + file.path +
                                   "' is empty: an empty file has no torrent; create it directly");
  }
  uint64_t pieces = file.ChunkCount(piece_size);
  bool single = pieces == 1;
  if (single ? !file.piece_layer.empty() : file.piece_layer.size() != pieces) {
    return Status::InvalidArgument(
        "file '" + file.path + "' of " + std::to_string(file.size) + " bytes needs " +
        (single ? std::string("no piece layer") : std::to_string(pieces) + " piece hashes") +
        " at piece size " + std::to_string(piece_size) + ", the manifest has " +
        std::to_string(file.piece_layer.size()));
  }
  std::string root_raw = RawBytes(file.pieces_root.data(), PiecesRoot::kSize);

  TorrentMetainfo m;
  m.info = FileTorrentInfo(file, piece_size, peer_ca);
  m.id = FileTorrentId::From(Sha256::Of(m.info.data(), m.info.size()));
  m.file_size = file.size;
  m.piece_size = piece_size;
  m.chunks = file.ChunkIds();

  BencodeWriter t;
  t.BeginDict();
  t.Bytes("info");
  std::string whole = t.Take();
  whole += m.info;
  BencodeWriter rest;
  if (!single) {
    std::string layer;
    layer.reserve(file.piece_layer.size() * ChunkId::kSize);
    for (const ChunkId& c : file.piece_layer) layer.append(RawBytes(c.data(), ChunkId::kSize));
    rest.Bytes("piece layers");
    rest.BeginDict();
    rest.Bytes(root_raw);
    rest.Bytes(layer);
    rest.End();
  }
  rest.End();
  whole += rest.str();
  m.torrent = std::move(whole);
  return m;
}

}  // namespace shoal
