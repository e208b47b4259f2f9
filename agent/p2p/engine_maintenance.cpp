// The engine's own thread: it drains libtorrent's alerts, samples the
// session's counters for Stats(), and applies evictions to torrents.
#include <chrono>
#include <set>

#include "libtorrent/alert_types.hpp"
#include "libtorrent/torrent_status.hpp"
#include "p2p/engine_impl.h"
#include "shoal/log.h"

namespace shoal {

void TorrentEngine::Impl::MaintenanceLoop() {
  auto next_stats = std::chrono::steady_clock::now();
  auto first_eviction = std::chrono::steady_clock::time_point::max();
  while (!stop_thread_) {
    session_->wait_for_alert(lt::milliseconds(100));
    HandleAlerts();
    auto now = std::chrono::steady_clock::now();
    if (now >= next_stats) {
      session_->post_session_stats();
      next_stats = now + std::chrono::milliseconds(500);
    }
    bool pending;
    {
      std::lock_guard<std::mutex> l(evict_mu_);
      pending = !evicted_.empty();
    }
    if (!pending) {
      first_eviction = std::chrono::steady_clock::time_point::max();
    } else if (first_eviction == std::chrono::steady_clock::time_point::max()) {
      first_eviction = now;
    }
    if (pending && now - first_eviction >= std::chrono::milliseconds(options_.eviction_batch_ms)) {
      ApplyEvictions();
      first_eviction = std::chrono::steady_clock::time_point::max();
    }
  }
}

void TorrentEngine::Impl::HandleAlerts() {
  std::vector<lt::alert*> alerts;
  session_->pop_alerts(&alerts);
  for (lt::alert* a : alerts) {
    if (auto* s = lt::alert_cast<lt::session_stats_alert>(a)) {
      auto c = s->counters();
      auto at = [&](int idx) -> uint64_t {
        return idx >= 0 ? static_cast<uint64_t>(c[static_cast<size_t>(idx)]) : 0;
      };
      std::lock_guard<std::mutex> l(mu_);
      stat_sent_ = at(idx_sent_);
      stat_recv_ = at(idx_recv_);
      stat_peers_ = at(idx_peers_);
      stat_banned_ = at(idx_banned_);
    } else if (auto* h = lt::alert_cast<lt::hash_failed_alert>(a)) {
      {
        std::lock_guard<std::mutex> l(mu_);
        ++hash_failures_;
      }
      Log(LogLevel::kWarn, "p2p.piece.hash_failed",
          {{"torrent", h->torrent_name()}, {"piece", static_cast<int>(h->piece_index)}});
    } else if (auto* e = lt::alert_cast<lt::file_error_alert>(a)) {
      Log(LogLevel::kWarn, "p2p.disk.error",
          {{"torrent", e->torrent_name()}, {"error", e->error.message()},
           {"op", lt::operation_name(e->op)}});
    } else if (auto* te = lt::alert_cast<lt::torrent_error_alert>(a)) {
      Log(LogLevel::kError, "p2p.torrent.error",
          {{"torrent", te->torrent_name()}, {"error", te->error.message()}});
    } else if (auto* lf = lt::alert_cast<lt::listen_failed_alert>(a)) {
      Log(LogLevel::kError, "p2p.listen_failed",
          {{"address", lf->address.to_string()}, {"port", lf->port}, {"error", lf->error.message()}});
    } else if (auto* tr = lt::alert_cast<lt::tracker_error_alert>(a)) {
      Log(LogLevel::kDebug, "p2p.tracker.error",
          {{"torrent", tr->torrent_name()}, {"url", tr->tracker_url()}, {"error", tr->error.message()}});
    }
  }
}

void TorrentEngine::Impl::ApplyEvictions() {
  std::vector<ChunkId> evicted;
  {
    std::lock_guard<std::mutex> l(evict_mu_);
    evicted.swap(evicted_);
  }
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_) return;
  // Torrents that advertise a piece whose chunk is gone.
  std::set<FileTorrentId> affected;
  for (const ChunkId& c : evicted) {
    if (store_.Contains(c)) continue;  // came back meanwhile
    auto range = chunk_index_.equal_range(c);
    for (auto e = range.first; e != range.second; ++e) {
      auto t = torrents_.find(e->second.first);
      if (t == torrents_.end()) continue;
      if (t->second->handle.have_piece(lt::piece_index_t(static_cast<int>(e->second.second)))) {
        affected.insert(e->second.first);
      }
    }
  }
  for (const FileTorrentId& id : affected) {
    Readd(*torrents_[id]);
    ++evictions_applied_;
  }
}

void TorrentEngine::Impl::Readd(FileTorrent& t) {
  // libtorrent cannot un-have a piece, so the torrent starts over with the
  // pieces the store still holds. Its peers reconnect through the tracker.
  lt::torrent_status st = t.handle.status({});
  t.bytes_carried += static_cast<uint64_t>(st.total_payload_download);
  session_->remove_torrent(t.handle);
  Status s = AddToSession(t);
  Log(s.ok() ? LogLevel::kInfo : LogLevel::kError, "p2p.torrent.readd",
      {{"torrent", t.id.ShortHex()}, {"reason", "chunk evicted"}, {"status", s}});
}

}  // namespace shoal
