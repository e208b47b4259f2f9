// ReadFetcher: gets the chunks a reader waits for into the store, soonest
// first, and says when each is there.
//
// For a waited-for piece and a few after it (the read-ahead), the fetcher
// adds the file's torrent (or its version's bundle, for a small file) to
// the engine and gives those pieces top priority
// and deadlines, so peers that have them send them first. A piece that no
// connected peer offers is fetched from the origin: at once when the
// tracker said nobody else is in the swarm, otherwise after
// origin_wait_ms (MissingChunkPolicy::ReadFetchDue). It is asked of the
// agent's ChunkFetcher (agent/fetch/chunk_fetcher.h) on the read's lane,
// pieces a reader waits on before read-ahead, and the fetcher hands it to
// the engine so this agent seeds it; a pull fetching the same chunk
// meanwhile is joined. How the origin is asked is one hook, request_origin
// (shoald's asks the tracker to have the chunk's owner fetch it): unset, or
// when the hook answers Unavailable, the fetcher reads the origin itself.
//
// Chunks from the origin are announced to waiters at once; chunks from
// peers are noticed within poll_ms.
//
// Thread-safety: every method may be called from any thread. `ready`
// callbacks run on one of the fetcher's threads, or on the caller's when
// the chunk is already stored; they must not block.
#ifndef SHOAL_AGENT_READ_READ_FETCHER_H_
#define SHOAL_AGENT_READ_READ_FETCHER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fetch/chunk_fetcher.h"
#include "p2p/file_torrent_id.h"
#include "shoal/chunk_store.h"
#include "shoal/manifest.h"
#include "shoal/missing_chunk_policy.h"
#include "shoal/origin.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

class TorrentEngine;

// One file of one version, as a read needs it. Immutable.
struct ReadFile {
  std::string ns, name;
  VersionId version;
  FileEntry file;
  uint32_t piece_size = 0;
  std::vector<ChunkId> chunks;  // file.ChunkIds()
  // A small file of a version with bundles of small files moves in one of
  // them (shoal/file_torrent_info.h), as piece `bundle_piece`; null for any
  // other file, which moves in its own torrent.
  std::shared_ptr<const std::vector<const FileEntry*>> bundle;
  size_t bundle_index = 0;  // which of the version's bundles
  uint64_t bundle_piece = 0;

  uint64_t PieceBytes(uint64_t piece) const;
  // The piece of the torrent the file moves in that holds its piece `piece`.
  uint64_t TorrentPiece(uint64_t piece) const { return bundle ? bundle_piece : piece; }
};

struct ReadFetcherOptions {
  int64_t origin_wait_ms =
      500;  // a piece no peer offers waits this long for one, unless the swarm is empty
  int64_t tracker_wait_ms = 500;  // how long a new torrent waits for the tracker's first reply
  int64_t give_up_ms = 300000;    // a waiter fails with Unavailable after this long
  int read_ahead_pieces = 4;      // pieces after the waited-for one to fetch too
  int origin_parallelism = 4;     // origin fetches in flight
  int poll_ms = 5;                // how often the store is checked while someone waits
};

// Counters for /metrics. Monotonic.
struct ReadFetchCounters {
  std::atomic<uint64_t> origin_chunks{0}, origin_bytes{0}, origin_failures{0};
};

class ReadFetcher {
 public:
  // Gets `chunks` of version `version` into the store, on a fetcher
  // thread: OK once they are stored here; Unavailable to have the fetcher
  // read the origin itself; any other error fails the read.
  using OriginRequest =
      std::function<Status(const std::string& ns, const std::string& name, const VersionId& version,
                           const std::vector<ChunkId>& chunks)>;

  // `fetcher` may have no origin (then only the hook, or peers, can
  // deliver). `announce_url` gives the tracker URL new torrents announce to.
  ReadFetcher(const ReadFetcherOptions& options, ChunkStore& store, TorrentEngine& engine,
              ChunkFetcher& fetcher, std::function<std::string()> announce_url);
  ~ReadFetcher();  // Stop()
  ReadFetcher(const ReadFetcher&) = delete;
  ReadFetcher& operator=(const ReadFetcher&) = delete;

  // Tried before the direct origin read. REQUIRES: before the first Await.
  void set_request_origin(OriginRequest hook) { request_origin_ = std::move(hook); }

  // Calls `ready` with OK once piece `piece` of `file` is in the store, or
  // with an error (the origin failed, `give_up` passed, or Stop). Pieces
  // up to `last_piece` (within the read-ahead) are fetched meanwhile.
  // `give_up` of zero means options.give_up_ms.
  // REQUIRES: piece <= last_piece < file->chunks.size().
  void Await(std::shared_ptr<const ReadFile> file, uint64_t piece, uint64_t last_piece,
             std::function<void(Status)> ready,
             std::chrono::milliseconds give_up = std::chrono::milliseconds::zero());

  // Fails every waiter with Unavailable, waits for fetches in flight, and
  // joins the threads. Idempotent; later Awaits fail at once.
  void Stop();

  const ReadFetchCounters& counters() const { return counters_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Waiter {
    std::shared_ptr<const ReadFile> file;
    uint64_t piece, last_wanted;
    std::function<void(Status)> ready;
    Clock::time_point since;
    std::chrono::milliseconds give_up;
  };
  // A file's torrent (or a version's bundle), as the loop sees it; pieces
  // are the torrent's. Loop thread only.
  struct Torrent {
    FileTorrentId id;
    Status add_error;
    Clock::time_point added;
    std::set<uint64_t> prioritized;
  };
  // The pieces of one file still wanted: `heads` are those a reader
  // waits on now; the rest are read-ahead.
  struct Wanted {
    std::shared_ptr<const ReadFile> file;
    std::set<uint64_t> pieces, heads;
  };

  void Loop();
  // One pass over the waiters: hands out what arrived, fails what expired,
  // and returns the pieces still wanted, per file.
  std::map<std::string, Wanted> Sweep();
  void Pursue(const Wanted& want);
  // The torrent `file` moves in, added to the engine if it is not yet (or
  // its add failed over a second ago).
  Torrent& TorrentOf(const ReadFile& file, Clock::time_point now);
  // The pieces of `missing` (not stored, not being fetched) whose turn at
  // the origin has come: no connected peer offers them, and the policy's
  // wait for a peer is over (the clock is the fetcher's unoffered()).
  std::vector<uint64_t> DueForOrigin(const ReadFile& file, const Torrent& t,
                                     const std::vector<uint64_t>& missing, Clock::time_point now);
  // Asks the fetcher for piece `piece` of `file`.
  void Ask(const std::shared_ptr<const ReadFile>& file, uint64_t piece, const Torrent& t,
           FetchPriority priority);
  // The end of an ask: wakes the piece's readers, or fails them.
  void Fetched(const ReadFile& file, uint64_t piece, const ChunkFetched& f);

  // Constant after construction.
  const ReadFetcherOptions options_;
  const MissingChunkPolicy policy_;
  ChunkStore& store_;
  TorrentEngine& engine_;
  ChunkFetcher& fetcher_;
  const std::function<std::string()> announce_url_;
  OriginRequest request_origin_;
  ReadFetchCounters counters_;

  std::mutex mu_;
  std::condition_variable cv_;  // wakes the loop
  // Protected by mu_.
  bool stopping_ = false;
  std::vector<Waiter> waiters_;
  std::vector<std::pair<ChunkId, Status>> failed_;  // origin errors to report

  std::map<std::string, Torrent> torrents_;  // by pieces root hex; loop thread only
  // Origin asks: pieces a reader waits on go first, so a cold range's
  // first byte never queues behind another range's read-ahead. Null
  // after Stop.
  std::unique_ptr<ChunkFetcher::Lane> lane_;
  std::thread loop_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_READ_FETCHER_H_
