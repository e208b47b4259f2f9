#include "shoal/missing_chunk_policy.h"

#include <algorithm>
#include <cmath>

namespace shoal {

int64_t MissingChunkPolicy::Elapsed(TimePoint since, TimePoint now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count();
}

int64_t MissingChunkPolicy::SwarmFormMs() const {
  return std::min<int64_t>(options_.origin_fallback_ms, kSwarmFormMs);
}

int64_t MissingChunkPolicy::LocalTakeoverMs(const PullPace& pace) const {
  // An owner needs the swarm to form, then the time to fetch its share of
  // the chunks, origin_parallelism at a time, on a busy node.
  const double est_ms =
      std::max(pace.fetch_ms, static_cast<double>(pace.piece_size) / kAssumedBytesPerMs);
  const double owners = pace.owners > 0 ? static_cast<double>(pace.owners) : 1.0;
  const double rounds = std::ceil(static_cast<double>(pace.total_chunks) / owners /
                                  static_cast<double>(options_.origin_parallelism));
  return std::min<int64_t>(
      kMaxLocalTakeoverMs,
      options_.origin_fallback_ms + static_cast<int64_t>((4 + 4 * rounds) * est_ms));
}

int64_t MissingChunkPolicy::LocalTurnMs(const OriginTurn& turn, int64_t takeover_ms) const {
  switch (turn.role) {
    case OriginRole::kOwner:
      return SwarmFormMs();
    case OriginRole::kNoRing:
      return options_.origin_fallback_ms;
    case OriginRole::kOther:
      break;
  }
  return std::min<int64_t>(kMaxLocalTakeoverMs,
                           SwarmFormMs() + static_cast<int64_t>(turn.rank) * takeover_ms);
}

MissingChunkAction MissingChunkPolicy::PullAction(const MissingChunk& c, bool tracker_up,
                                                  bool has_origin, int64_t takeover_ms,
                                                  TimePoint now) const {
  const int64_t waited = Elapsed(c.unavailable_since, now);
  const bool formed = c.alone || waited >= SwarmFormMs();
  if (tracker_up && c.small && has_origin) {
    // One fetch order per small chunk would pace the pull by the orders'
    // round trips: the owner fetches it itself.
    if (c.turn.role == OriginRole::kOwner)
      return formed ? MissingChunkAction::kFetch : MissingChunkAction::kWait;
    if (c.turn.role == OriginRole::kOther && !c.alone && waited < SwarmFormMs() + kSmallOwnerMs)
      return MissingChunkAction::kWait;
  }
  if (tracker_up) {
    return formed && AskDue(c.last_asked, now) ? MissingChunkAction::kAskTracker
                                               : MissingChunkAction::kWait;
  }
  if (!has_origin) return MissingChunkAction::kWait;
  return waited >= LocalTurnMs(c.turn, takeover_ms) ? MissingChunkAction::kFetch
                                                    : MissingChunkAction::kWait;
}

bool MissingChunkPolicy::MayReconnect(TimePoint lost, TimePoint now) const {
  return Elapsed(lost, now) >= kReconnectMs;
}

bool MissingChunkPolicy::AskDue(std::optional<TimePoint> last_asked, TimePoint now) const {
  return !last_asked || Elapsed(*last_asked, now) >= kAskAgainMs;
}

bool MissingChunkPolicy::ReadOwnersLate(TimePoint start, TimePoint now) const {
  return Elapsed(start, now) >= kReadOwnerWaitMs;
}

bool MissingChunkPolicy::ReadAwaitsTracker(int tracker_peers, int peers, TimePoint added,
                                           TimePoint now) const {
  return tracker_peers < 0 && peers == 0 && Elapsed(added, now) < options_.read_tracker_wait_ms;
}

bool MissingChunkPolicy::ReadFetchDue(bool alone, TimePoint since, TimePoint now) const {
  return alone || Elapsed(since, now) >= options_.read_origin_wait_ms;
}

int64_t MissingChunkPolicy::OrderTakeoverMs(std::optional<int64_t> slowest_fetch_ms) {
  // Until a fetch has been timed, nothing says how long one takes (the
  // first orders share the origin among all of them): wait the longest.
  if (!slowest_fetch_ms) return kMaxOrderTakeoverMs;
  return std::clamp<int64_t>(2 * *slowest_fetch_ms + kOrderSlackMs, kMinOrderTakeoverMs,
                             kMaxOrderTakeoverMs);
}

}  // namespace shoal
