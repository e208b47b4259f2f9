#include "fetch/unoffered_pieces.h"

namespace shoal {
namespace {

// A torrent not asked about for this long is forgotten: its pull and its
// reads have ended, or they poll far more often than this.
constexpr std::chrono::seconds kForgetAfter{60};

}  // namespace

std::vector<UnofferedPieces::Clock::time_point> UnofferedPieces::Since(
    const FileTorrentId& torrent, const std::vector<uint64_t>& pieces, Clock::time_point now) {
  std::lock_guard<std::mutex> l(mu_);
  Prune(now);
  Torrent& t = torrents_[torrent];
  t.touched = now;
  std::unordered_map<uint64_t, Clock::time_point> next;
  next.reserve(pieces.size());
  std::vector<Clock::time_point> out;
  out.reserve(pieces.size());
  for (uint64_t p : pieces) {
    auto it = t.since.find(p);
    const Clock::time_point since = it == t.since.end() ? now : it->second;
    next.emplace(p, since);
    out.push_back(since);
  }
  t.since = std::move(next);
  return out;
}

size_t UnofferedPieces::torrents() const {
  std::lock_guard<std::mutex> l(mu_);
  return torrents_.size();
}

void UnofferedPieces::Prune(Clock::time_point now) {
  if (now - pruned_ < kForgetAfter) return;
  pruned_ = now;
  for (auto it = torrents_.begin(); it != torrents_.end();) {
    if (now - it->second.touched >= kForgetAfter) {
      it = torrents_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace shoal
