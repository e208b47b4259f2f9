// FileTorrentId: names one file's torrent. It is the torrent's BitTorrent v2
// info-hash, the SHA-256 of its canonical info dictionary, so the same file
// at the same piece size has the same ID on every agent and in every model.
#ifndef SHOAL_AGENT_P2P_FILE_TORRENT_ID_H_
#define SHOAL_AGENT_P2P_FILE_TORRENT_ID_H_

#include "shoal/hash256.h"

namespace shoal {

struct FileTorrentIdTag {
  static constexpr const char* kName = "file torrent id";
};
using FileTorrentId = Hash256<FileTorrentIdTag>;

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_FILE_TORRENT_ID_H_
