// FileTorrentId: names one file's torrent. It is the torrent's BitTorrent v2
// info-hash, the SHA-256 of its canonical info dictionary, so the same file
// at the same piece size has the same ID on every agent and in every model.
#ifndef SHOAL_AGENT_P2P_FILE_TORRENT_ID_H_
#define SHOAL_AGENT_P2P_FILE_TORRENT_ID_H_

#include <cstdint>

#include "shoal/hash256.h"

namespace shoal {

struct FileTorrentIdTag {
  static constexpr const char* kName = "file torrent id";
};
using FileTorrentId = Hash256<FileTorrentIdTag>;

// Which of an agent's `sessions` peer sessions carries torrent `id` (see
// TorrentEngine): its first four bytes, big-endian, modulo the count. Every
// agent computes the same, so a peer that knows another agent's first
// listen port and session count knows the port for each torrent: the first
// port plus this.
inline uint16_t SessionOf(const FileTorrentId& id, uint16_t sessions) {
  if (sessions <= 1) return 0;
  const uint8_t* b = id.data();
  const uint32_t key =
      (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  return static_cast<uint16_t>(key % sessions);
}

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_FILE_TORRENT_ID_H_
