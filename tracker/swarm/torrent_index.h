// TorrentIndex: which namespaces each published torrent belongs to (each
// file's, and each version's bundle of small files), keyed by the 20-byte
// info-hash BitTorrent clients announce (the first 20 bytes of the v2
// info-hash, shoal/file_torrent_info.h).
//
// The announce endpoint serves a torrent only to tokens that may read one
// of its namespaces, so nobody can park swarms for torrents the registry
// does not hold. One file in several versions or namespaces is counted
// once per version; it leaves the index when its last version is deleted.
// Soft state, rebuilt from the registry at start and kept in step with it
// (registry_follower.h); adding or removing a version twice is harmless,
// since the local commit and the registry's feed both report it.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_TORRENT_INDEX_H_
#define SHOAL_TRACKER_TORRENT_INDEX_H_

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "shoal/manifest.h"
#include "shoal/version_id.h"
#include "swarm/swarm_store.h"

namespace shoal::tracker {

class TorrentIndex {
 public:
  // Torrents are those of a cluster whose peer CA is `peer_ca` (empty:
  // plain peers), which is part of every info-hash.
  explicit TorrentIndex(std::string peer_ca) : peer_ca_(std::move(peer_ca)) {}

  // Counts every torrent of `m` (VersionTorrentHashes), version `id`,
  // under m.ns. Nothing if the version is indexed already.
  void Add(const VersionId& id, const Manifest& m);
  // Undoes the Add of version `id`; nothing if it is not indexed.
  void Remove(const VersionId& id);

  // True if `fn` is true for a namespace holding a file with this torrent
  // (false if none does). `fn` runs under this index's lock: it must not
  // call back into it.
  bool AnyNamespace(const InfoHash20& info_hash, const std::function<bool(const std::string&)>& fn);
  // Distinct torrents indexed.
  size_t size();
  // Versions indexed.
  size_t versions();

 private:
  struct Indexed {
    std::string ns;
    std::vector<InfoHash20> hashes;
  };

  const std::string peer_ca_;
  std::mutex mu_;
  // info-hash -> namespace -> versions holding it; protected by mu_
  std::unordered_map<InfoHash20, std::map<std::string, uint32_t>, InfoHash20Hash> torrents_;
  std::unordered_map<VersionId, Indexed> versions_;  // protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TORRENT_INDEX_H_
