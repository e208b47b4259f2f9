// TorrentEngine::Impl: the state behind TorrentEngine. torrent_engine.cpp
// holds the public calls, engine_session.cpp the session's settings and
// start, engine_maintenance.cpp the engine's own thread (alerts, counters,
// evictions).
#ifndef SHOAL_AGENT_P2P_ENGINE_IMPL_H_
#define SHOAL_AGENT_P2P_ENGINE_IMPL_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "libtorrent/add_torrent_params.hpp"
#include "libtorrent/alert.hpp"
#include "libtorrent/session.hpp"
#include "libtorrent/torrent_handle.hpp"
#include "libtorrent/torrent_info.hpp"
#include "p2p/chunk_disk_io.h"
#include "p2p/peer_auth_plugin.h"
#include "p2p/piece_holds.h"
#include "p2p/torrent_engine.h"
#include "p2p/torrent_layout.h"
#include "p2p/torrent_metainfo.h"

namespace shoal {

namespace lt = libtorrent;

struct FileTorrent {
  FileTorrentId id;
  std::shared_ptr<const lt::torrent_info> info;
  std::shared_ptr<const TorrentLayout> layout;
  std::vector<std::string> trackers;
  lt::torrent_handle handle;
  uint64_t bytes_carried = 0;  // payload received by earlier incarnations (re-adds)
  bool download = true;        // false: seed what the store holds, fetch only prioritized pieces
  std::vector<bool> skip;  // pieces a pull has written out: never downloaded again (empty: none)
  // Engine thread only: when a failed read last made the engine check it.
  std::chrono::steady_clock::time_point last_suspected;
};

class TorrentEngine::Impl {
 public:
  Impl(const EngineOptions& options, ChunkStore& store);
  ~Impl();

  // Starts options_.sessions sessions on consecutive ports.
  Status StartSession();
  // A session listening on `listen` with the engine's plugins and disk
  // interface; null if libtorrent refused to start one (logged).
  std::unique_ptr<lt::session> NewSession(const std::string& listen);
  void Stop();
  // The session that carries torrent `id` (SessionOf). REQUIRES: started
  // and not stopped (add_mu_ held, or the engine thread).
  lt::session& SessionFor(const FileTorrentId& id) {
    return *sessions_[SessionOf(id, static_cast<uint16_t>(sessions_.size()))];
  }

  // Add parameters for `t` with the pieces the store holds now.
  lt::add_torrent_params ParamsFor(const FileTorrent& t);
  // Adds `t` to the session; retries while an earlier incarnation of the
  // same torrent is still being removed.
  Status AddToSession(FileTorrent& t);
  // Waits until `h` has finished checking (instant with this disk I/O).
  Status WaitReady(const lt::torrent_handle& h);
  std::shared_ptr<FileTorrent> Find(const FileTorrentId& id);
  // Adds the torrent `meta` describes, or finds it (see AddFile); `label`
  // names it in errors and logs. engine_add.cpp.
  Result<FileTorrentId> Add(const TorrentMetainfo& meta, const std::string& label,
                            const std::string& announce_url, AddMode mode);
  // For Add, of a torrent the engine has: adds the tracker if new, and
  // wants every piece again if `mode` downloads.
  Status Rejoin(FileTorrent& existing, const std::string& announce_url, AddMode mode);
  // Why Find returned null: Unavailable once stopped, else NotFound.
  Status Missing(const FileTorrentId& id);

  // Peer admission (engine_tls.cpp). The CA torrents are built with, once
  // SetPeerIdentity has named it ("" for plain peers); Unavailable after
  // add_timeout_ms without.
  Result<std::string> AwaitPeerCa();
  // Whether peers are admitted by certificate (the identity names a CA).
  bool PeerTls() const;
  // Gives `h` the engine's certificate, if peers are admitted by one.
  void PresentCertificate(const lt::torrent_handle& h);
  // Moves every session's listen socket to TLS or plain BitTorrent, on the
  // same ports.
  Status ListenFor(bool tls);
  // The port peers connect to session `k`, TLS or plain; 0 before it
  // listens.
  uint16_t ListenPort(size_t k = 0) const;
  // Counts a connection refused in its TLS handshake (engine thread).
  void HandlePeerAlert(lt::alert* a);
  void CountRefusal(const lt::error_code& ec, const lt::tcp::endpoint& from);

  // The engine's own thread: alerts, session counters, evictions.
  void MaintenanceLoop();
  // Waits up to `timeout` for any session to have alerts.
  void WaitForAlerts(std::chrono::milliseconds timeout);
  void HandleAlerts(size_t session);
  void ApplyEvictions();
  // Queues the chunks of `h`'s torrent that the store lacks as evicted.
  void SuspectTorrent(const lt::torrent_handle& h);
  // libtorrent stops a torrent's downloads (upload mode) when a write fails
  // for want of space, for ten minutes; these resume them as soon as the
  // store can make room again, checked once a second (engine thread).
  void NoteWritesStopped(const lt::torrent_handle& h);
  void ResumeStoppedWrites();
  void Readd(FileTorrent& t);

  // Constant after construction.
  const EngineOptions options_;
  ChunkStore& store_;
  const std::shared_ptr<TorrentCatalog> catalog_ = std::make_shared<TorrentCatalog>();
  const std::shared_ptr<DiskIoCounters> disk_counters_ = std::make_shared<DiskIoCounters>();
  // The peer sessions; sessions_[k] listens on the first one's port + k.
  // Filled by StartSession, cleared by Stop (under add_mu_).
  std::vector<std::unique_ptr<lt::session>> sessions_;
  int idx_sent_ = -1, idx_recv_ = -1, idx_peers_ = -1, idx_banned_ = -1;

  // Set by libtorrent's alert notification (any session's network thread);
  // the engine thread waits on it.
  std::mutex alert_mu_;
  std::condition_variable alert_cv_;
  bool alerts_ready_ = false;  // protected by alert_mu_

  // Serializes what adds or removes torrents in the session (AddFile,
  // Remove, re-adds after evictions), which may wait on libtorrent; taken
  // before mu_, never while holding it.
  std::mutex add_mu_;

  mutable std::mutex mu_;
  // Protected by mu_; held only briefly, never across a libtorrent call that
  // waits.
  bool stopped_ = false;
  std::map<FileTorrentId, std::shared_ptr<FileTorrent>> torrents_;
  std::unordered_multimap<ChunkId, std::pair<FileTorrentId, uint64_t>> chunk_index_;
  // Each session's counters at its last stats alert.
  struct SessionCounters {
    uint64_t sent = 0, recv = 0, peers = 0, banned = 0;
  };
  std::vector<SessionCounters> session_counters_;
  uint64_t hash_failures_ = 0;
  // Other peers in each torrent's last tracker reply, by torrent name (the
  // hex pieces root): a reply may come before AddFile has registered its
  // torrent.
  std::map<std::string, int> tracker_peers_;
  uint64_t evictions_applied_ = 0;
  // Peer admission: unknown until SetPeerIdentity when the options await it.
  bool identity_known_ = false;
  PeerIdentity identity_;
  bool listen_tls_ = false;  // the listen socket speaks TLS
  std::array<uint64_t, static_cast<size_t>(PeerRefusal::kCount)> refused_{};
  std::condition_variable identity_cv_;  // identity_known_ or stopped_ became true
  // Connections PeerDeadlines closed; shared with the plugin, which the
  // session may hold until it is destroyed.
  const std::shared_ptr<std::atomic<uint64_t>> peers_stalled_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  // Membership proofs of `auth` mode; shared with the plugin likewise.
  const std::shared_ptr<PeerAuthGate> auth_gate_ =
      std::make_shared<PeerAuthGate>(std::chrono::seconds(options_.handshake_timeout_s));
  // Pieces served only to their next owners; shared with the plugin likewise.
  const std::shared_ptr<PieceHolds> holds_ = std::make_shared<PieceHolds>();

  // Chunks reported evicted, not yet applied. Its own lock, so the store's
  // listener never waits on a session call.
  std::mutex evict_mu_;
  std::vector<ChunkId> evicted_;  // protected by evict_mu_

  uint64_t file_errors_ = 0;                        // engine thread only
  std::vector<lt::torrent_handle> writes_stopped_;  // engine thread only
  uint64_t refusals_seen_ = 0;                      // engine thread only
  bool apply_now_ = false;  // engine thread only: apply evictions without batching

  std::atomic<bool> stop_thread_{false};
  std::thread thread_;
};

// The key the disk interface finds a torrent's layout under.
inline ShortInfoHash ShortKeyOf(const FileTorrentId& id) {
  ShortInfoHash k;
  std::memcpy(k.data(), id.data(), k.size());
  return k;
}

// Runs `f`, turning an exception from libtorrent (a torrent removed under
// a handle, an aborted session) into Unavailable.
template <typename F>
Status CallLibtorrent(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::Unavailable(std::string(what) + ": " + e.what());
  }
}

// Why the TLS handshake behind `ec` failed (engine_tls.cpp).
PeerRefusal ClassifyRefusal(const lt::error_code& ec);

// The engine's libtorrent settings (see engine_session.cpp).
lt::settings_pack EngineSettings(const EngineOptions& options);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_ENGINE_IMPL_H_
