#include "swarm/torrent_index.h"

#include <cstring>

#include "shoal/file_torrent_info.h"

namespace shoal::tracker {

void TorrentIndex::Add(const VersionId& id, const Manifest& m) {
  Indexed entry{m.ns, {}};
  for (const Digest& full : VersionTorrentHashes(m, peer_ca_)) {
    InfoHash20 h;
    std::memcpy(h.data(), full.data(), h.size());
    entry.hashes.push_back(h);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!versions_.emplace(id, entry).second) return;
  for (const InfoHash20& h : entry.hashes) torrents_[h][m.ns]++;
}

void TorrentIndex::Remove(const VersionId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto v = versions_.find(id);
  if (v == versions_.end()) return;
  for (const InfoHash20& h : v->second.hashes) {
    auto t = torrents_.find(h);
    if (t == torrents_.end()) continue;
    auto n = t->second.find(v->second.ns);
    if (n == t->second.end()) continue;
    if (--n->second == 0) t->second.erase(n);
    if (t->second.empty()) torrents_.erase(t);
  }
  versions_.erase(v);
}

bool TorrentIndex::AnyNamespace(const InfoHash20& info_hash,
                                const std::function<bool(const std::string&)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = torrents_.find(info_hash);
  if (it == torrents_.end()) return false;
  for (const auto& entry : it->second) {
    if (fn(entry.first)) return true;
  }
  return false;
}

size_t TorrentIndex::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return torrents_.size();
}

size_t TorrentIndex::versions() {
  std::lock_guard<std::mutex> lock(mu_);
  return versions_.size();
}

}  // namespace shoal::tracker
