// MissingChunkPolicy: when a chunk no peer offers is taken from the origin,
// and by whom.
//
// Such a chunk should be read from the origin once for the whole cluster,
// by its owner on the ring, and soon. Pulls, reads and the tracker's fetch
// scheduler each decide: how long a new torrent's swarm gets to show a
// peer holding the chunk; when to ask the tracker, which orders the chunk's
// owner to fetch it; when to ask again; when this agent fetches the chunk
// itself (as its owner, or taking over from an owner that did not deliver,
// or while the tracker is away); and how long the tracker waits for an
// ordered owner before ordering the next. Every timing of those decisions
// is here, so they agree, and a simulator can run the same rules.
//
// The policy is pure: it reads no clock, opens no socket and starts no
// thread. Every instant is passed in as a steady_clock time_point (`now`,
// and when a chunk was first seen missing); a simulator passes its own.
//
// Thread-safety: immutable after construction; any method may be called
// from any thread.
#ifndef SHOAL_MISSING_CHUNK_POLICY_H_
#define SHOAL_MISSING_CHUNK_POLICY_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace shoal {

// The settings that shape the policy; AgentOptions and ReadFetcherOptions
// hold them under the names in the comments.
struct MissingChunkOptions {
  int64_t origin_fallback_ms = 3000;   // origin_fallback_ms: a pull's wait with no ring
  int origin_parallelism = 4;          // origin_parallelism: a pull's origin GETs in flight
  int64_t read_origin_wait_ms = 500;   // read_origin_wait_ms: a read's wait for a peer
  int64_t read_tracker_wait_ms = 500;  // tracker_wait_ms: a read's wait for the first reply
};

// Where this agent stands for a chunk on the last ring it saw.
enum class OriginRole { kNoRing, kOwner, kOther };

struct OriginTurn {
  OriginRole role = OriginRole::kNoRing;
  size_t rank = 0;  // this agent's place in the chunk's ranking; 0 = owner
};

// What a pull does now about one chunk no peer offers.
enum class MissingChunkAction {
  kWait,        // give peers, the owner or the tracker more time
  kAskTracker,  // ask the tracker to have an owner fetch it
  kFetch,       // fetch it from the origin itself
};

// One chunk a pull lacks and no connected peer offers.
struct MissingChunk {
  std::chrono::steady_clock::time_point unavailable_since;          // first seen unoffered
  std::optional<std::chrono::steady_clock::time_point> last_asked;  // of the tracker
  bool alone = false;  // the tracker says nobody else is in the swarm
  bool small = false;  // a small file's chunk: one short GET
  OriginTurn turn;
};

// How a pull's own origin fetches are going, for its takeover timeout.
struct PullPace {
  double fetch_ms = 0;        // how long one origin fetch takes here; 0 if none timed yet
  uint32_t piece_size = 0;    // bytes
  uint64_t total_chunks = 0;  // in the version
  size_t owners = 0;          // members of the ring; 0 without one
};

class MissingChunkPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  // How long a new torrent's swarm gets to show a chunk (the first
  // announce and connections) before the chunk is taken as missing.
  static constexpr int64_t kSwarmFormMs = 1500;
  // How long a non-owner of a small file's chunk lets the owner fetch it
  // (after the swarm formed) before asking the tracker.
  static constexpr int64_t kSmallOwnerMs = 3000;
  // The longest a pull, under the local rule, waits for an owner.
  static constexpr int64_t kMaxLocalTakeoverMs = 30000;
  // Before a pull has timed an origin fetch, it assumes the origin sends
  // this many bytes per millisecond (25 MB/s).
  static constexpr double kAssumedBytesPerMs = 25e3;
  // A chunk asked of the tracker and still missing is asked again after
  // this: the tracker answers "recent" for a chunk delivered lately, and
  // fetches again one whose holders may have evicted it since.
  static constexpr int64_t kAskAgainMs = 3000;
  // While the tracker is unreachable, a pull reconnects at most this often.
  static constexpr int64_t kReconnectMs = 5000;
  // How long a read waits for owners before reading the origin itself.
  static constexpr int64_t kReadOwnerWaitMs = 30000;
  // The tracker's wait for an ordered owner: twice the slowest recent
  // fetch plus kOrderSlackMs, within [kMinOrderTakeoverMs,
  // kMaxOrderTakeoverMs]; the maximum until a fetch has been timed.
  static constexpr int64_t kOrderSlackMs = 2000;
  static constexpr int64_t kMinOrderTakeoverMs = 3000;
  static constexpr int64_t kMaxOrderTakeoverMs = 60000;

  MissingChunkPolicy() = default;
  explicit MissingChunkPolicy(const MissingChunkOptions& options) : options_(options) {}

  const MissingChunkOptions& options() const { return options_; }

  // Nobody else is in the swarm, by the tracker's last reply (-1 before the
  // first) and the connected peers: no peer can offer anything.
  static bool Alone(int tracker_peers, int peers) { return tracker_peers == 0 && peers == 0; }

  // --- Pulls ---

  // The swarm-form wait: the shorter of kSwarmFormMs and origin_fallback_ms.
  int64_t SwarmFormMs() const;

  // How long, under the local rule, the k-th in a chunk's ranking waits per
  // rank: origin_fallback_ms plus the time the owners need to fetch their
  // share, origin_parallelism at a time, at most kMaxLocalTakeoverMs.
  int64_t LocalTakeoverMs(const PullPace& pace) const;

  // When this agent's own turn at the origin comes under the local rule,
  // counted from when the chunk went unoffered: the owner's after the swarm
  // formed; with no ring, after origin_fallback_ms; the k-th in rank's
  // after k takeover timeouts, at most kMaxLocalTakeoverMs.
  int64_t LocalTurnMs(const OriginTurn& turn, int64_t takeover_ms) const;

  // The pull's rule for chunk `c`. `tracker_up`: the tracker answers (else
  // the local rule); `has_origin`: this agent can fetch from the origin;
  // `takeover_ms` from LocalTakeoverMs.
  //  - A small file's chunk, with the tracker up: its owner fetches it once
  //    the swarm formed (at once if alone); others give the owner
  //    kSmallOwnerMs more before asking the tracker.
  //  - With the tracker up: ask once the swarm formed (at once if alone),
  //    and again every kAskAgainMs.
  //  - Without it: fetch at LocalTurnMs.
  MissingChunkAction PullAction(const MissingChunk& c, bool tracker_up, bool has_origin,
                                int64_t takeover_ms, TimePoint now) const;

  // Whether a pull that lost the tracker at `lost` tries it again now.
  bool MayReconnect(TimePoint lost, TimePoint now) const;

  // --- Reads ---

  // Whether a chunk last asked of the tracker at `last_asked` (never, if
  // empty) is asked now. Pulls apply the same rule within PullAction.
  bool AskDue(std::optional<TimePoint> last_asked, TimePoint now) const;

  // Whether a read that began waiting for owners at `start` has waited
  // kReadOwnerWaitMs, and reads the origin itself.
  bool ReadOwnersLate(TimePoint start, TimePoint now) const;

  // Whether a read's new torrent, added at `added`, still waits for the
  // tracker's first reply before taking a chunk as unoffered.
  bool ReadAwaitsTracker(int tracker_peers, int peers, TimePoint added, TimePoint now) const;

  // Whether a read's piece, unoffered since `since`, goes to the origin:
  // at once when `alone`, else after read_origin_wait_ms.
  bool ReadFetchDue(bool alone, TimePoint since, TimePoint now) const;

  // --- The tracker ---

  // How long the tracker waits for an ordered owner before ordering the
  // chunk's next owner, given the slowest of its recent timed fetches (none
  // yet: kMaxOrderTakeoverMs). An order sent again while the first still
  // runs reads the chunk twice, so this follows the tail, not the mean.
  static int64_t OrderTakeoverMs(std::optional<int64_t> slowest_fetch_ms);

 private:
  static int64_t Elapsed(TimePoint since, TimePoint now);

  MissingChunkOptions options_;
};

}  // namespace shoal

#endif  // SHOAL_MISSING_CHUNK_POLICY_H_
