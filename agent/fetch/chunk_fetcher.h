// ChunkFetcher: how shoald gets a chunk no peer offers, and hands it to
// the engine. Pulls (agent/daemon/origin_fetches.h), reads
// (agent/read/read_fetcher.h) and the tracker's fetch orders
// (agent/daemon/fetch_orders.h) all ask it; none reads the origin or tells
// the engine of a chunk by itself.
//
// It owns four things that used to be kept by each asker:
// - The origin reads. One per chunk: a chunk asked for while a fetch of it
//   is queued or running joins that fetch, whoever asked first, and every
//   asker hears when it ends. The bytes are counted once, for the asker
//   that asked first; the others get `joined` and 0 bytes. A queued fetch
//   runs on whichever asker gets to it first, so a reader whose lane is
//   free never waits behind a pull's queue for a chunk both want. A fetch
//   that any asker wants owned (an owner's, see ChunkWriteOptions::owned)
//   commits owned, or is marked owned once stored.
// - The queues. A requester asks through a Lane, with its own number of
//   asks in flight (a pull's --origin-parallelism, the read fetcher's) and
//   two priorities: what someone waits on now goes before what is fetched
//   ahead. A lane holds one ask per chunk; asking again only raises its
//   priority. FetchNow fetches on the caller's thread instead (a fetch
//   order's job, which already runs on a thread of its own).
// - The hand-over. A chunk fetched for an asker that names where it goes
//   (ChunkFetch::seed) is handed to that torrent piece once stored, so this
//   agent seeds it; HandOver does the same for a chunk that arrived
//   otherwise.
// - Since when each piece has had no peer offering it (unoffered()), the
//   clock the missing-chunk rules read before sending an asker to the
//   origin.
//
// An asker may name a way to have the chunk delivered without reading the
// origin here (ChunkFetch::elsewhere: a read asks the tracker to have the
// chunk's owner fetch it). The lane tries it first, and reads the origin
// only if it answers Unavailable.
//
// Thread-safety: every method may be called from any thread. A Lane's
// `done` callbacks run on a fetching thread (a lane's worker or a FetchNow
// caller, maybe another requester's), never after the Lane is destroyed;
// they must not block for long. The fetcher must outlive its lanes.
#ifndef SHOAL_AGENT_FETCH_CHUNK_FETCHER_H_
#define SHOAL_AGENT_FETCH_CHUNK_FETCHER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "fetch/unoffered_pieces.h"
#include "p2p/file_torrent_id.h"
#include "shoal/chunk_id.h"
#include "shoal/chunk_store.h"
#include "shoal/origin.h"
#include "shoal/status.h"
#include "shoal/work_queue.h"

namespace shoal {

class TorrentEngine;

// Piece `piece` of torrent `torrent`: where a chunk is handed to the engine.
struct PieceAt {
  FileTorrentId torrent;
  uint64_t piece = 0;
};

// What someone waits on now goes first; what is fetched ahead after.
enum class FetchPriority { kWaited = 0, kAhead = 1 };

struct ChunkFetch {
  ChunkId id;
  uint64_t size = 0;   // the chunk's bytes, as the manifest says
  bool owned = false;  // this agent owns the chunk: it commits owned
  // Counts the origin's bytes as they arrive, if not null (a pull's
  // progress, the tracker's view of an owner's fetch).
  std::atomic<uint64_t>* streamed = nullptr;
  // Where the chunk goes in the engine once stored; none: the asker sees
  // to it (a fetch order holds it for the next owners first).
  std::optional<PieceAt> seed;
  // Tried first by a lane, if set: OK once the chunk is stored here
  // without this agent reading the origin; Unavailable to read it here;
  // any other error ends the ask.
  std::function<Status()> elsewhere;
};

struct ChunkFetched {
  Status status;        // OK: the chunk is in the store (or was already)
  uint64_t bytes = 0;   // what the origin sent for this asker; 0 if joined or already stored
  bool joined = false;  // another asker's fetch read it, or it came from elsewhere
  double ms = 0;        // how long the fetch ran
};

class ChunkFetcher {
  struct Ask;
  struct LaneState;

 public:
  // `origin` may be null: every fetch then fails with Unavailable.
  // `engine` may be null: nothing is handed over (unit tests).
  ChunkFetcher(Origin* origin, ChunkStore& store, TorrentEngine* engine = nullptr);
  ~ChunkFetcher();
  ChunkFetcher(const ChunkFetcher&) = delete;
  ChunkFetcher& operator=(const ChunkFetcher&) = delete;

  using Done = std::function<void(const ChunkFetched&)>;

  // A requester's queue. Destroying it drops its fetches not yet started
  // (unless another asker runs them), waits for its own that run, and
  // makes sure none of its `done` callbacks runs afterwards.
  class Lane {
   public:
    ~Lane();
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;
    // Fetches `fetch` (or joins the fetch of it under way) and calls
    // `done` once it ends. If this lane asked for the chunk already and
    // has not answered, only raises that ask to `priority`.
    void Fetch(const ChunkFetch& fetch, Done done, FetchPriority priority = FetchPriority::kAhead);
    // Whether this lane has an ask for `id` not answered yet.
    bool Waiting(const ChunkId& id) const;

   private:
    friend class ChunkFetcher;
    Lane(ChunkFetcher& fetcher, int parallelism);
    // A worker's turn: the most urgent queued ask.
    void Next();
    ChunkFetcher& fetcher_;
    const std::shared_ptr<LaneState> state_;
    WorkQueue queue_;  // last: its threads stop before the rest goes
  };

  // A lane with `parallelism` fetches of its own in flight (1 to 64).
  std::unique_ptr<Lane> NewLane(int parallelism);

  // Fetches `fetch` on the caller's thread, or waits for the fetch of it
  // under way (running it here if it has not started).
  ChunkFetched FetchNow(const ChunkFetch& fetch);

  // Tells the engine that `at`'s chunk is in the store, so peers are
  // offered it: the engine's answer (Unavailable while the torrent is
  // being added again; NotFound for a torrent it does not hold). OK
  // without an engine.
  Status HandOver(const PieceAt& at);

  bool has_origin() const { return origin_ != nullptr; }
  UnofferedPieces& unoffered() { return unoffered_; }

  // Origin reads this fetcher started, and askers that joined one.
  uint64_t fetches() const { return fetches_.load(); }
  uint64_t joins() const { return joins_.load(); }

 private:
  struct Flight;
  // A lane's asks and whether it still takes callbacks; shared with the
  // flights it waits on, which may outlive it. Protected by mu_.
  struct LaneState {
    bool closed = false;
    int calling = 0;  // its callbacks running now
    // Asks not yet taken by a worker, by priority, and every ask not yet
    // answered, by chunk.
    std::deque<std::shared_ptr<Ask>> queued[2];
    std::unordered_map<ChunkId, std::shared_ptr<Ask>> open;
  };
  // One lane's ask for one chunk, from Fetch until it is answered.
  struct Ask {
    ChunkFetch fetch;
    Done done;
    FetchPriority priority;
    bool taken = false;  // a worker took it from the queue
    // The flight it joined: at once, or once `elsewhere` answered
    // Unavailable.
    std::shared_ptr<Flight> flight;
  };
  struct Waiter {
    std::shared_ptr<LaneState> lane;  // null: a FetchNow caller, which waits itself
    std::shared_ptr<Ask> ask;         // the lane's ask; null for FetchNow
    bool first;                       // the asker that started the flight
    std::optional<PieceAt> seed;
  };
  // One chunk's fetch, from its first asker until it ends.
  struct Flight {
    ChunkFetch fetch;
    bool started = false;
    bool finished = false;
    ChunkFetched result;
    std::vector<Waiter> waiting;
  };

  // Adds an asker to the flight of `fetch`, making one if none is under
  // way; sets `first` if it made one. REQUIRES: mu_ held.
  std::shared_ptr<Flight> Join(const ChunkFetch& fetch, std::shared_ptr<LaneState> lane,
                               std::shared_ptr<Ask> ask, bool* first);
  // Joins the flight of `ask` for its lane. REQUIRES: mu_ held.
  void JoinAsk(const std::shared_ptr<LaneState>& lane, const std::shared_ptr<Ask>& ask);
  // `ask`'s answer, to its lane (unless closed), without a flight.
  void Answer(const std::shared_ptr<LaneState>& lane, const std::shared_ptr<Ask>& ask,
              const ChunkFetched& result);
  // Hands `chunk`, just stored, to `at`; logs a failure.
  void SeedAfterFetch(const PieceAt& at, const ChunkId& chunk);
  // Runs `flight` unless someone has started it; then calls its waiters.
  void Run(const std::shared_ptr<Flight>& flight);
  void Call(const Waiter& w, const ChunkFetched& result);
  // No callback of `lane` runs after this returns; its flights that no
  // one else waits for and that have not started are forgotten.
  void CloseLane(const std::shared_ptr<LaneState>& lane);

  Origin* const origin_;
  ChunkStore& store_;
  TorrentEngine* const engine_;
  UnofferedPieces unoffered_;
  std::atomic<uint64_t> fetches_{0}, joins_{0};
  std::mutex mu_;
  std::condition_variable cv_;  // a flight finished, or a lane's callback returned
  std::unordered_map<ChunkId, std::shared_ptr<Flight>> flights_;  // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_FETCH_CHUNK_FETCHER_H_
