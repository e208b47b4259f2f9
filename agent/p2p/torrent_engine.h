// TorrentEngine: libtorrent sessions whose disk I/O is the ChunkStore.
//
// Each unique file is one private, v2-only torrent (see torrent_metainfo.h),
// except that a version's small files share one (see bundle_metainfo.h).
// The engine seeds every piece whose chunk the store holds and downloads the
// rest from peers; a downloaded piece becomes a chunk once, whichever torrent
// it came in. Peers come from the tracker named by each file's announce URL,
// or from ConnectPeer.
//
// Evictions: the store reports each chunk that leaves it through its
// EvictionListener. Forward those to ChunkEvicted (an EvictionRelay does this
// safely across the engine's lifetime); every torrent holding that chunk then
// stops advertising the piece (it is removed and added again with the pieces
// the store still has, after eviction_batch_ms), so no peer is promised a
// piece that is gone. A read that races an eviction fails (the peer gets a
// reject and a DONT_HAVE, never bytes), and the engine then applies the
// eviction at once, even if none was reported. Peers of a re-added torrent
// reconnect within seconds.
//
// Peers: with a peer identity that names a CA (SetPeerIdentity), every
// torrent is an SSL torrent of that CA and peers connect over TLS with a
// certificate it signed; without, they speak plain BitTorrent.
//
// Sessions: the engine runs EngineOptions::sessions libtorrent sessions,
// each with its own network thread, on consecutive listen ports. Torrent
// `id` lives in session SessionOf(id, n) (file_torrent_id.h) and announces
// that session's port, so peers find it there. One store, one catalog and
// the same peer admission, holds and counters serve them all.
//
// Thread-safety: every method may be called from any thread. The store must
// outlive the engine. Stop() (or destruction) ends the session.
#ifndef SHOAL_AGENT_P2P_TORRENT_ENGINE_H_
#define SHOAL_AGENT_P2P_TORRENT_ENGINE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "p2p/engine_options.h"
#include "p2p/file_torrent_id.h"
#include "shoal/chunk_store.h"
#include "shoal/manifest.h"
#include "shoal/status.h"

namespace shoal {

class TorrentEngine {
 public:
  // Starts the session and listens. InvalidArgument for bad options;
  // Unavailable if the listen address cannot be bound.
  static Result<std::unique_ptr<TorrentEngine>> Start(const EngineOptions& options,
                                                      ChunkStore& store);
  ~TorrentEngine();
  TorrentEngine(const TorrentEngine&) = delete;
  TorrentEngine& operator=(const TorrentEngine&) = delete;

  // The port peers connect to (TLS or plain, the same number): the first
  // session's. Session k listens on this port + k.
  uint16_t listen_port() const;
  // How many peer sessions the engine runs (EngineOptions::sessions).
  uint16_t sessions() const;
  // The port of the session that carries torrent `id`: listen_port() +
  // SessionOf(id, sessions()).
  uint16_t listen_port(const FileTorrentId& id) const;

  // How this engine is admitted by peers, and admits them. The first call
  // fixes the CA (or plain peers) for the engine's life: torrents are
  // built with it, and AddFile waits for it when the options await it.
  // Later calls renew the certificate: every torrent presents the new one
  // to connections made afterwards.
  // InvalidArgument for a CA without a certificate and key, or a CA other
  // than the first (restart to follow a cluster that changed its CA).
  Status SetPeerIdentity(const PeerIdentity& identity);

  // kDownload: fetch every piece the store lacks from peers (a pull).
  // kSeedOnly: seed what the store holds and fetch only pieces given to
  // PrioritizePieces (an owner seeding chunks it was ordered to fetch, a
  // read that wants a range). A torrent added seed-only starts downloading
  // when it is added again with kDownload.
  enum class AddMode { kDownload, kSeedOnly };

  // Adds the torrent of one file, or finds it if it is already here (the
  // announce URL is then added to its trackers). Pieces the store holds are
  // seeded at once and never downloaded. Returns when the torrent is ready.
  // InvalidArgument for an empty file or a piece layer that does not fit;
  // Unavailable while the peer identity the options await has not come.
  Result<FileTorrentId> AddFile(const FileEntry& file, uint32_t piece_size,
                                const std::string& announce_url, AddMode mode = AddMode::kDownload);

  // A version's small files in one torrent (see bundle_metainfo.h).
  struct Bundle {
    FileTorrentId id;
    std::vector<ChunkId> chunks;  // piece i's chunk: the pieces root of its file(s)
  };
  // Adds the bundle of `files` (each no larger than `piece_size`), or finds
  // it, as AddFile does for one file. InvalidArgument as
  // BuildBundleMetainfo.
  Result<Bundle> AddBundle(const std::vector<const FileEntry*>& files, uint32_t piece_size,
                           const std::string& announce_url, AddMode mode = AddMode::kDownload);

  struct FileProgress {
    uint64_t total_pieces = 0;
    uint64_t have_pieces = 0;
    uint64_t bytes_from_peers = 0;  // payload received, in whole 16 KiB blocks (the last padded)
    int peers = 0;                  // connected peers
    int tracker_peers = -1;         // other peers in the tracker's last reply; -1 before the first
    bool complete = false;          // the torrent has every piece (so the store has every chunk)
  };
  // NotFound for an unknown torrent; IOError if the torrent stopped on a
  // disk error; Unavailable for a moment while the torrent is re-added after
  // an eviction (ask again).
  Result<FileProgress> Progress(const FileTorrentId& id);

  // Tells the engine that piece `piece`'s chunk arrived by another route
  // (e.g. the origin) and is in the store: the torrent takes it as had, and
  // seeds it. The piece is hash-checked (the chunk is read once, not written
  // again) and shows in Progress a moment later. NotFound if the torrent is
  // unknown; Unavailable if the store no longer holds the chunk (evicted
  // since it arrived: fetch it again); InvalidArgument for a piece out of
  // range.
  Status ChunkArrived(const FileTorrentId& id, uint64_t piece);

  // Makes pieces [first, last] the torrent's most urgent: top priority and
  // deadlines in file order, so libtorrent asks peers for them before any
  // other (a range that a reader waits for). Other pieces keep their
  // priority. InvalidArgument for a range out of bounds.
  Status PrioritizePieces(const FileTorrentId& id, uint64_t first, uint64_t last);

  // The hand-on (see piece_holds.h): for `hold`, or until one of
  // `receivers` ("ip", listen port) has it, the engine serves piece `piece`
  // of torrent `id` to no one else. Call it before ChunkArrived, so no
  // other peer's request comes first. InvalidArgument for a piece out of
  // range; NotFound for an unknown torrent.
  Status HoldPiece(const FileTorrentId& id, uint64_t piece,
                   std::vector<std::pair<std::string, uint16_t>> receivers,
                   std::chrono::milliseconds hold);

  // Pieces a pull has written out to its destination and no longer needs in
  // the cache: they are never downloaded again, also after an eviction, so
  // the cache can be a window onto a version larger than itself. Pieces the
  // store holds are still seeded. Adding the torrent again with kDownload
  // wants every piece again. InvalidArgument for a piece out of range.
  Status SkipPieces(const FileTorrentId& id, const std::vector<uint64_t>& pieces);

  // Pieces that no connected peer has and this agent lacks: the candidates
  // for fetching from the origin.
  Result<std::vector<uint64_t>> UnavailablePieces(const FileTorrentId& id);

  // Connects the torrent to a peer directly (tests, or peers learnt
  // elsewhere). InvalidArgument for a bad address.
  Status ConnectPeer(const FileTorrentId& id, const std::string& ip, uint16_t port);

  // Removes the torrent; its chunks stay in the store.
  Status Remove(const FileTorrentId& id);

  // Tells the engine a chunk has left the store. Cheap and non-blocking: the
  // torrents are updated later on the engine's own thread.
  void ChunkEvicted(const ChunkId& id);

  EngineStats Stats() const;

  // Announces every torrent to its trackers now, whatever their intervals
  // (a restarted tracker has forgotten every swarm). Does not wait.
  void ReannounceAll();

  // Ends the session. Idempotent; afterwards every call fails with
  // Unavailable.
  void Stop();

  class Impl;

 private:
  explicit TorrentEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_TORRENT_ENGINE_H_
