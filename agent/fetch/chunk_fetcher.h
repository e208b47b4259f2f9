// ChunkFetcher: the agent's one way to read a chunk from the origin.
//
// Every origin read of shoald goes through it: a pull's own fetches (the
// local rule, agent/daemon/origin_fetches.h), a reader's
// (agent/read/read_fetcher.h) and the tracker's fetch orders
// (agent/daemon/fetch_orders.h). A requester asks through a Lane, a queue
// with its own number of fetches in flight (a pull's --origin-parallelism,
// the read fetcher's), or on its own thread (FetchNow, for a fetch order's
// job, which already runs on a thread of its own).
//
// One origin read per chunk: a chunk asked for while a fetch of it is
// queued or running joins that fetch, whoever asked first, and every asker
// hears when it ends. The bytes are counted once, for the asker that
// asked first; the others get `joined` and 0 bytes. A queued fetch
// runs on whichever asker gets to it first, so a reader whose lane is free
// never waits behind a pull's queue for a chunk both want. A fetch that
// any asker wants owned (an owner's, see ChunkWriteOptions::owned)
// commits owned, or is marked owned once stored.
//
// What the requester does with the chunk (hands it to the engine, wakes
// readers, holds it for the next owners) stays with the requester, which
// knows the torrent and the piece: the chunk is in the store when `done`
// runs.
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
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/chunk_store.h"
#include "shoal/origin.h"
#include "shoal/status.h"
#include "shoal/work_queue.h"

namespace shoal {

struct ChunkFetch {
  ChunkId id;
  uint64_t size = 0;   // the chunk's bytes, as the manifest says
  bool owned = false;  // this agent owns the chunk: it commits owned
  // Counts the origin's bytes as they arrive, if not null (a pull's
  // progress, the tracker's view of an owner's fetch).
  std::atomic<uint64_t>* streamed = nullptr;
};

struct ChunkFetched {
  Status status;        // OK: the chunk is in the store (or was already)
  uint64_t bytes = 0;   // what the origin sent for this asker; 0 if joined or already stored
  bool joined = false;  // another asker's fetch read it
  double ms = 0;        // how long the fetch ran
};

class ChunkFetcher {
 public:
  // `origin` may be null: every fetch then fails with Unavailable.
  ChunkFetcher(Origin* origin, ChunkStore& store);
  ~ChunkFetcher();
  ChunkFetcher(const ChunkFetcher&) = delete;
  ChunkFetcher& operator=(const ChunkFetcher&) = delete;

  using Done = std::function<void(const ChunkFetched&)>;

  // Whether a lane still takes callbacks; shared with its waiters, which
  // may outlive it. Protected by mu_.
  struct LaneState {
    bool closed = false;
    int calling = 0;  // its callbacks running now
  };

  // A requester's queue. Destroying it drops its fetches not yet started
  // (unless another asker runs them), waits for its own that run, and
  // makes sure none of its `done` callbacks runs afterwards.
  class Lane {
   public:
    ~Lane();
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;
    // Fetches `fetch` (or joins the fetch of it under way) and calls
    // `done` once it ends.
    void Fetch(const ChunkFetch& fetch, Done done);

   private:
    friend class ChunkFetcher;
    Lane(ChunkFetcher& fetcher, int parallelism);
    ChunkFetcher& fetcher_;
    const std::shared_ptr<LaneState> state_;
    WorkQueue queue_;  // last: its threads stop before the rest goes
  };

  // A lane with `parallelism` fetches of its own in flight (1 to 64).
  std::unique_ptr<Lane> NewLane(int parallelism);

  // Fetches `fetch` on the caller's thread, or waits for the fetch of it
  // under way (running it here if it has not started).
  ChunkFetched FetchNow(const ChunkFetch& fetch);

  // Origin reads this fetcher started, and askers that joined one.
  uint64_t fetches() const { return fetches_.load(); }
  uint64_t joins() const { return joins_.load(); }

 private:
  struct Waiter {
    std::shared_ptr<LaneState> lane;  // null: a FetchNow caller, which waits itself
    Done done;
    bool first;  // the asker that started the flight
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
  std::shared_ptr<Flight> Join(const ChunkFetch& fetch, std::shared_ptr<LaneState> lane, Done done,
                               bool* first);
  // Runs `flight` unless someone has started it; then calls its waiters.
  void Run(const std::shared_ptr<Flight>& flight);
  void Call(const Waiter& w, const ChunkFetched& result);
  // No callback of `lane` runs after this returns; its flights that no
  // one else waits for and that have not started are forgotten.
  void CloseLane(const std::shared_ptr<LaneState>& lane);

  Origin* const origin_;
  ChunkStore& store_;
  std::atomic<uint64_t> fetches_{0}, joins_{0};
  std::mutex mu_;
  std::condition_variable cv_;  // a flight finished, or a lane's callback returned
  std::unordered_map<ChunkId, std::shared_ptr<Flight>> flights_;  // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_FETCH_CHUNK_FETCHER_H_
