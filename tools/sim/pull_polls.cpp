// Each pull's decisions about chunks no peer offers, by MissingChunkPolicy.
//
// A real pull looks every 100 ms; here every pull looks at once every
// pull_poll_ms, so the asks of one instant go to the tracker as one
// FetchScheduler::Need: the same as each pull asking in turn, since a
// second ask for a chunk at the same instant changes nothing there.
#include <optional>

#include "sim/sim_run.h"

namespace shoal::sim {

void SimRun::Poll() {
  ++poll_;
  std::vector<ChunkId> asks;
  const MissingChunkPolicy::TimePoint now = At(now_);
  // The tracker's swarm holds the pulls that started and live on.
  const bool alone = swarm_.live_members() <= 1;
  for (int node : pullers_) {
    const NodeResult& r = nodes_[static_cast<size_t>(node)];
    if (r.killed || r.done_s >= 0 || swarm_.unoffered(node) == 0) continue;
    MissingChunk mc;
    mc.unavailable_since = At(r.start_s);
    mc.alone = alone;
    mc.turn.role = OriginRole::kOther;
    // The policy's answer depends on the chunk only through last_asked:
    // asked once per distinct value.
    float memo_key = -2;
    MissingChunkAction memo = MissingChunkAction::kWait;
    float* asked = &last_asked_[static_cast<size_t>(node) * o_.chunks];
    for (int c = 0; c < static_cast<int>(o_.chunks); ++c) {
      if (!swarm_.Unoffered(node, c)) continue;
      if (asked[c] != memo_key) {
        memo_key = asked[c];
        mc.last_asked = asked[c] < 0 ? std::nullopt : std::optional(At(asked[c]));
        memo = policy_.PullAction(mc, /*tracker_up=*/true, /*has_origin=*/true,
                                  MissingChunkPolicy::kMaxLocalTakeoverMs, now);
      }
      if (memo != MissingChunkAction::kAskTracker) continue;
      asked[c] = static_cast<float>(now_);
      if (ask_stamp_[static_cast<size_t>(c)] == poll_) continue;
      ask_stamp_[static_cast<size_t>(c)] = poll_;
      asks.push_back(chunk_ids_[static_cast<size_t>(c)]);
    }
  }
  if (!asks.empty()) scheduler_->Need(target_, asks);
}

void SimRun::PollDirect() {
  // Without peers nor tracker a pull is alone and has no ring: the policy's
  // local rule says when it reads the origin itself.
  const MissingChunkPolicy::TimePoint now = At(now_);
  for (int node : pullers_) {
    const NodeResult& r = nodes_[static_cast<size_t>(node)];
    if (r.killed || r.done_s >= 0 || direct_next_[static_cast<size_t>(node)] > 0) continue;
    MissingChunk mc;
    mc.unavailable_since = At(r.start_s);
    mc.alone = true;
    PullPace pace;
    pace.piece_size = static_cast<uint32_t>(o_.piece_bytes);
    pace.total_chunks = o_.chunks;
    const int64_t takeover = policy_.LocalTakeoverMs(pace);
    if (policy_.PullAction(mc, /*tracker_up=*/false, /*has_origin=*/true, takeover, now) ==
        MissingChunkAction::kFetch)
      StartDirectFetches(node);
  }
}

void SimRun::StartDirectFetches(int node) {
  const size_t n = static_cast<size_t>(node);
  if (nodes_[n].killed) return;
  while (direct_in_flight_[n] < static_cast<uint32_t>(policy_.options().origin_parallelism) &&
         direct_next_[n] < o_.chunks) {
    const int chunk = static_cast<int>(direct_next_[n]++);
    ++direct_in_flight_[n];
    events_.Push({now_ + o_.origin_latency_ms / 1000, EventKind::kOriginStart, node, chunk});
  }
}

}  // namespace shoal::sim
