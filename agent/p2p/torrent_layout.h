// TorrentLayout: what the disk interface must know of a torrent to map its
// pieces onto chunks. A file's torrent has pieces of piece_size bytes, the
// last shorter; a bundle of small files (bundle_metainfo.h) has one piece
// per file, each as long as its file, given in piece_bytes. TorrentCatalog hands layouts from the
// engine to the disk interface: the engine registers one under the torrent's (truncated) info-hash
// before adding the torrent, and the disk interface claims it when libtorrent creates the torrent's
// storage.
//
// Thread-safety: TorrentLayout is immutable once built. TorrentCatalog may be
// used from any thread.
#ifndef SHOAL_AGENT_P2P_TORRENT_LAYOUT_H_
#define SHOAL_AGENT_P2P_TORRENT_LAYOUT_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/merkle.h"

namespace shoal {

struct TorrentLayout {
  uint64_t file_size = 0;             // bytes; unused when piece_bytes is set
  uint32_t piece_size = 0;            // bytes
  std::vector<ChunkId> chunks;        // one per piece
  std::vector<uint64_t> piece_bytes;  // per piece (a bundle), or empty (one file)

  uint64_t num_pieces() const { return chunks.size(); }
  // Bytes of piece `piece`'s chunk, never counting libtorrent's padding.
  // REQUIRES: piece < num_pieces().
  uint64_t PieceBytes(uint64_t piece) const {
    if (!piece_bytes.empty()) return piece_bytes[piece];
    uint64_t start = piece * piece_size;
    return file_size - start < piece_size ? file_size - start : piece_size;
  }
  uint64_t PieceBlocks(uint64_t piece) const { return BlockCount(PieceBytes(piece)); }
};

// The first 20 bytes of a v2 info-hash: what libtorrent hands a new storage.
using ShortInfoHash = std::array<uint8_t, 20>;

class TorrentCatalog {
 public:
  void Register(const ShortInfoHash& key, std::shared_ptr<const TorrentLayout> layout) {
    std::lock_guard<std::mutex> l(mu_);
    layouts_[key] = std::move(layout);
  }
  // The layout registered under `key`, or null. It stays registered, so a
  // torrent removed and added again finds it.
  std::shared_ptr<const TorrentLayout> Find(const ShortInfoHash& key) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = layouts_.find(key);
    return it == layouts_.end() ? nullptr : it->second;
  }
  void Unregister(const ShortInfoHash& key) {
    std::lock_guard<std::mutex> l(mu_);
    layouts_.erase(key);
  }

 private:
  mutable std::mutex mu_;
  std::map<ShortInfoHash, std::shared_ptr<const TorrentLayout>> layouts_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_TORRENT_LAYOUT_H_
