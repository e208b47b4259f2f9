#include "torrent_index.h"

#include <cstring>

#include "shoal/file_torrent_info.h"

namespace shoal::tracker {

void TorrentIndex::Add(const Manifest& m) { Apply(m, +1); }

void TorrentIndex::Remove(const Manifest& m) { Apply(m, -1); }

void TorrentIndex::Apply(const Manifest& m, int delta) {
  std::vector<InfoHash20> hashes;
  for (const Digest& full : VersionTorrentHashes(m, peer_ca_)) {
    InfoHash20 h;
    std::memcpy(h.data(), full.data(), h.size());
    hashes.push_back(h);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const InfoHash20& h : hashes) {
    if (delta > 0) {
      torrents_[h][m.ns]++;
      continue;
    }
    auto t = torrents_.find(h);
    if (t == torrents_.end()) continue;
    auto n = t->second.find(m.ns);
    if (n == t->second.end()) continue;
    if (--n->second == 0) t->second.erase(n);
    if (t->second.empty()) torrents_.erase(t);
  }
}

std::vector<std::string> TorrentIndex::Namespaces(const InfoHash20& info_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto it = torrents_.find(info_hash);
  if (it == torrents_.end()) return out;
  for (const auto& [ns, count] : it->second) out.push_back(ns);
  return out;
}

size_t TorrentIndex::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return torrents_.size();
}

}  // namespace shoal::tracker
