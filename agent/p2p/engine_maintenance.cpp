// The engine's own thread: it drains libtorrent's alerts, samples the
// sessions' counters for Stats(), and applies evictions to torrents; and
// Stats() itself.
#include <chrono>
#include <set>

#include "libtorrent/alert_types.hpp"
#include "libtorrent/torrent_status.hpp"
#include "p2p/engine_impl.h"
#include "shoal/log.h"

namespace shoal {

void TorrentEngine::Impl::MaintenanceLoop() {
  auto next_stats = std::chrono::steady_clock::now();
  auto next_resume = next_stats;
  auto first_eviction = std::chrono::steady_clock::time_point::max();
  while (!stop_thread_) {
    WaitForAlerts(std::chrono::milliseconds(100));
    for (size_t k = 0; k < sessions_.size(); ++k) HandleAlerts(k);
    auto now = std::chrono::steady_clock::now();
    if (now >= next_stats) {
      for (auto& session : sessions_) session->post_session_stats();
      next_stats = now + std::chrono::milliseconds(500);
    }
    if (!writes_stopped_.empty() && now >= next_resume) {
      ResumeStoppedWrites();
      next_resume = now + std::chrono::seconds(1);
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
    if (pending && (apply_now_ || now - first_eviction >=
                                      std::chrono::milliseconds(options_.eviction_batch_ms))) {
      apply_now_ = false;
      ApplyEvictions();
      first_eviction = std::chrono::steady_clock::time_point::max();
    }
  }
}

void TorrentEngine::Impl::WaitForAlerts(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(alert_mu_);
  alert_cv_.wait_for(l, timeout, [this] { return alerts_ready_; });
  alerts_ready_ = false;
}

void TorrentEngine::Impl::HandleAlerts(size_t session) {
  std::vector<lt::alert*> alerts;
  sessions_[session]->pop_alerts(&alerts);
  for (lt::alert* a : alerts) {
    if (auto* s = lt::alert_cast<lt::session_stats_alert>(a)) {
      auto c = s->counters();
      auto at = [&](int idx) -> uint64_t {
        return idx >= 0 ? static_cast<uint64_t>(c[static_cast<size_t>(idx)]) : 0;
      };
      std::lock_guard<std::mutex> l(mu_);
      SessionCounters& sc = session_counters_[session];
      sc.sent = at(idx_sent_);
      sc.recv = at(idx_recv_);
      sc.peers = at(idx_peers_);
      sc.banned = at(idx_banned_);
    } else if (auto* h = lt::alert_cast<lt::hash_failed_alert>(a)) {
      {
        std::lock_guard<std::mutex> l(mu_);
        ++hash_failures_;
      }
      Log(LogLevel::kWarn, "p2p.piece.hash_failed",
          {{"torrent", h->torrent_name()}, {"piece", static_cast<int>(h->piece_index)}});
    } else if (auto* e = lt::alert_cast<lt::file_error_alert>(a)) {
      // One per failed block: log the first and then one in a hundred.
      if (file_errors_++ % 100 == 0) {
        Log(LogLevel::kWarn, "p2p.disk.error",
            {{"torrent", e->torrent_name()},
             {"error", e->error.message()},
             {"op", lt::operation_name(e->op)},
             {"errors", file_errors_}});
      }
      // A read found a chunk gone that no eviction reported (e.g. the
      // listener is not wired): treat the torrent's missing chunks as
      // evicted, so it stops advertising them.
      if (e->op == lt::operation_t::file_read) SuspectTorrent(e->handle);
      if (e->error == boost::system::errc::no_space_on_device) NoteWritesStopped(e->handle);
    } else if (auto* te = lt::alert_cast<lt::torrent_error_alert>(a)) {
      Log(LogLevel::kError, "p2p.torrent.error",
          {{"torrent", te->torrent_name()}, {"error", te->error.message()}});
    } else if (auto* lf = lt::alert_cast<lt::listen_failed_alert>(a)) {
      Log(LogLevel::kError, "p2p.listen_failed",
          {{"address", lf->address.to_string()},
           {"port", lf->port},
           {"error", lf->error.message()}});
    } else if (a->category() & (lt::alert_category::peer | lt::alert_category::connect)) {
      HandlePeerAlert(a);
    } else if (auto* reply = lt::alert_cast<lt::tracker_reply_alert>(a)) {
      // Whether anyone else is in the swarm: a reader that hears "no one"
      // goes to the origin without waiting for peers.
      std::lock_guard<std::mutex> l(mu_);
      tracker_peers_[reply->torrent_name()] = reply->num_peers;
    } else if (auto* tr = lt::alert_cast<lt::tracker_error_alert>(a)) {
      Log(LogLevel::kDebug, "p2p.tracker.error",
          {{"torrent", tr->torrent_name()},
           {"url", tr->tracker_url()},
           {"error", tr->error.message()}});
    }
  }
}

void TorrentEngine::Impl::NoteWritesStopped(const lt::torrent_handle& h) {
  for (const lt::torrent_handle& seen : writes_stopped_) {
    if (seen == h) return;
  }
  writes_stopped_.push_back(h);
}

void TorrentEngine::Impl::ResumeStoppedWrites() {
  // While the last refused write would still not fit, evicting all that
  // can be, resuming would only fail again: a pull says so (NoSpace) once
  // that lasts.
  const StoreSpace space = store_.Space();
  if (space.refusing && !space.room) return;
  for (const lt::torrent_handle& h : writes_stopped_) {
    if (!h.is_valid()) continue;  // removed meanwhile
    h.unset_flags(lt::torrent_flags::upload_mode);
    Log(LogLevel::kInfo, "p2p.writes_resumed",
        {{"torrent", h.status({}).name},
         {"disk_free", space.disk_free_bytes},
         {"evictable", space.evictable_bytes}});
  }
  writes_stopped_.clear();
}

void TorrentEngine::Impl::SuspectTorrent(const lt::torrent_handle& h) {
  std::shared_ptr<FileTorrent> t;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [id, ft] : torrents_) {
      if (ft->handle == h) t = ft;
    }
  }
  if (t == nullptr) return;
  auto now = std::chrono::steady_clock::now();
  if (now - t->last_suspected < std::chrono::seconds(1)) return;
  t->last_suspected = now;
  std::vector<ChunkId> gone;
  for (const ChunkId& c : t->layout->chunks) {
    if (!store_.Contains(c)) gone.push_back(c);
  }
  std::lock_guard<std::mutex> l(evict_mu_);
  evicted_.insert(evicted_.end(), gone.begin(), gone.end());
  apply_now_ = !gone.empty();  // a peer was already refused: do not wait
}

void TorrentEngine::Impl::ApplyEvictions() {
  std::vector<ChunkId> evicted;
  {
    std::lock_guard<std::mutex> l(evict_mu_);
    evicted.swap(evicted_);
  }
  std::lock_guard<std::mutex> add(add_mu_);
  // Torrents that hold a piece whose chunk is gone, with their handles.
  std::vector<std::pair<std::shared_ptr<FileTorrent>, uint64_t>> candidates;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return;
    for (const ChunkId& c : evicted) {
      auto range = chunk_index_.equal_range(c);
      for (auto e = range.first; e != range.second; ++e) {
        auto t = torrents_.find(e->second.first);
        if (t != torrents_.end()) candidates.emplace_back(t->second, e->second.second);
      }
    }
  }
  std::set<FileTorrent*> done;
  for (auto& [t, piece] : candidates) {
    if (done.count(t.get()) != 0) continue;
    if (store_.Contains(t->layout->chunks[piece])) continue;  // came back meanwhile
    bool have = false;
    (void)CallLibtorrent("have piece", [&] {
      have = t->handle.have_piece(lt::piece_index_t(static_cast<int>(piece)));
      return Status::OK();
    });
    if (!have) continue;
    done.insert(t.get());
    Readd(*t);
    std::lock_guard<std::mutex> l(mu_);
    ++evictions_applied_;
  }
}

void TorrentEngine::Impl::Readd(FileTorrent& t) {
  // libtorrent cannot un-have a piece, so the torrent starts over with the
  // pieces the store still holds. Its peers reconnect through the tracker.
  // REQUIRES: add_mu_ held.
  lt::torrent_handle old;
  {
    std::lock_guard<std::mutex> l(mu_);
    old = t.handle;
  }
  FileTorrent next = t;
  Status s = CallLibtorrent("re-add torrent", [&] {
    lt::torrent_status st = old.status({});
    next.bytes_carried += static_cast<uint64_t>(st.total_payload_download);
    SessionFor(t.id).remove_torrent(old);
    return AddToSession(next);
  });
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    t.handle = next.handle;
    t.bytes_carried = next.bytes_carried;
  }
  Log(s.ok() ? LogLevel::kInfo : LogLevel::kError, "p2p.torrent.readd",
      {{"torrent", t.id.ShortHex()}, {"reason", "chunk evicted"}, {"status", s}});
}

EngineStats TorrentEngine::Stats() const {
  EngineStats s;
  DiskIoStats d = impl_->disk_counters_->Snapshot();
  std::lock_guard<std::mutex> l(impl_->mu_);
  std::vector<uint64_t> carried(impl_->session_counters_.size(), 0);
  for (const auto& [id, t] : impl_->torrents_) {
    ++carried[SessionOf(id, static_cast<uint16_t>(carried.size()))];
  }
  for (size_t k = 0; k < impl_->session_counters_.size(); ++k) {
    const Impl::SessionCounters& c = impl_->session_counters_[k];
    s.bytes_up += c.sent;
    s.bytes_down += c.recv;
    s.peers += c.peers;
    s.peers_banned += c.banned;
    EngineStats::Session e;
    e.port = impl_->stopped_ ? 0 : impl_->ListenPort(k);
    e.bytes_up = c.sent;
    e.bytes_down = c.recv;
    e.peers = c.peers;
    e.torrents = carried[k];
    s.sessions.push_back(e);
  }
  s.hash_failures = impl_->hash_failures_;
  s.torrents = impl_->torrents_.size();
  s.pieces_committed = d.pieces_committed;
  s.blocks_served = d.blocks_read;
  s.read_failures = d.read_failures;
  s.write_failures = d.write_failures;
  s.write_stalls = d.write_stalls;
  s.evictions_applied = impl_->evictions_applied_;
  s.peers_stalled = impl_->peers_stalled_->load();
  s.pieces_held = impl_->holds_->holds.load();
  s.requests_kept = impl_->holds_->kept.load();
  s.holds_handed = impl_->holds_->handed.load();
  s.refused = impl_->refused_;
  s.peer_tls = impl_->identity_.tls();
  s.peer_auth = impl_->identity_.auth();
  s.auth_refused = impl_->auth_gate_->refused();
  s.peers_admitted = impl_->auth_gate_->admitted();
  s.cert_not_after_ms = impl_->identity_.not_after_ms;
  return s;
}

}  // namespace shoal
