// MissingChunkPolicy with a fake clock: each rule's wait, in milliseconds,
// for pulls, reads and the tracker.
#include "shoal/missing_chunk_policy.h"

#include <catch2/catch.hpp>
#include <chrono>

using namespace shoal;

namespace {

using Action = MissingChunkAction;

// A clock that moves only when told.
struct FakeClock {
  MissingChunkPolicy::TimePoint now{std::chrono::hours(1)};
  void Advance(int64_t ms) { now += std::chrono::milliseconds(ms); }
  MissingChunkPolicy::TimePoint Ago(int64_t ms) const {
    return now - std::chrono::milliseconds(ms);
  }
};

MissingChunk Missing(const FakeClock& clock, OriginRole role, size_t rank = 0) {
  MissingChunk c;
  c.unavailable_since = clock.now;
  c.turn = {role, rank};
  return c;
}

// The first instant, in ms after the chunk went missing, at which `action`
// is decided (stepping 1 ms); -1 if not within `limit`.
int64_t FirstMs(const MissingChunkPolicy& policy, MissingChunk c, bool tracker_up,
                int64_t takeover_ms, Action action, int64_t limit = 70000) {
  FakeClock clock;
  c.unavailable_since = clock.now;
  for (int64_t ms = 0; ms <= limit; ++ms, clock.Advance(1)) {
    if (policy.PullAction(c, tracker_up, /*has_origin=*/true, takeover_ms, clock.now) == action)
      return ms;
  }
  return -1;
}

}  // namespace

TEST_CASE("the swarm gets 1.5 s to form, or origin_fallback_ms if that is shorter", "[policy]") {
  CHECK(MissingChunkPolicy().SwarmFormMs() == 1500);
  MissingChunkOptions o;
  o.origin_fallback_ms = 700;
  CHECK(MissingChunkPolicy(o).SwarmFormMs() == 700);
}

TEST_CASE("with the tracker up, a pull asks once the swarm formed, then every 3 s", "[policy]") {
  MissingChunkPolicy policy;
  FakeClock clock;
  MissingChunk c = Missing(clock, OriginRole::kNoRing);
  auto act = [&] { return policy.PullAction(c, true, true, 0, clock.now); };
  clock.Advance(1499);
  CHECK(act() == Action::kWait);
  clock.Advance(1);
  CHECK(act() == Action::kAskTracker);
  c.last_asked = clock.now;
  clock.Advance(2999);
  CHECK(act() == Action::kWait);
  clock.Advance(1);
  CHECK(act() == Action::kAskTracker);
  // Alone in the swarm: no peer will offer it, so ask at once.
  MissingChunk alone = Missing(clock, OriginRole::kNoRing);
  alone.alone = true;
  CHECK(policy.PullAction(alone, true, true, 0, clock.now) == Action::kAskTracker);
  // A big file's chunk is asked for whatever this agent's turn.
  CHECK(FirstMs(policy, Missing(clock, OriginRole::kOwner), true, 0, Action::kAskTracker) == 1500);
  CHECK(FirstMs(policy, Missing(clock, OriginRole::kOwner), true, 0, Action::kFetch) == -1);
}

TEST_CASE("a small file's chunk is fetched by its owner, and others give the owner 3 s more",
          "[policy]") {
  MissingChunkPolicy policy;
  FakeClock clock;
  MissingChunk owner = Missing(clock, OriginRole::kOwner);
  owner.small = true;
  CHECK(FirstMs(policy, owner, true, 0, Action::kFetch) == 1500);
  CHECK(FirstMs(policy, owner, true, 0, Action::kAskTracker) == -1);
  owner.alone = true;
  CHECK(FirstMs(policy, owner, true, 0, Action::kFetch) == 0);

  MissingChunk other = Missing(clock, OriginRole::kOther, 1);
  other.small = true;
  CHECK(FirstMs(policy, other, true, 0, Action::kAskTracker) == 4500);
  CHECK(FirstMs(policy, other, true, 0, Action::kFetch) == -1);
  other.alone = true;  // nobody else: the owner is not in the swarm either
  CHECK(FirstMs(policy, other, true, 0, Action::kAskTracker) == 0);
  // Without an origin, the owner asks the tracker like anyone.
  owner.alone = false;
  CHECK(policy.PullAction(owner, true, /*has_origin=*/false, 0,
                          clock.now + std::chrono::seconds(2)) == Action::kAskTracker);
}

TEST_CASE("with the tracker away, each in a chunk's ranking takes its turn at the origin",
          "[policy]") {
  MissingChunkOptions o;
  o.origin_fallback_ms = 3000;
  MissingChunkPolicy policy(o);
  FakeClock clock;
  const int64_t takeover = 8000;
  CHECK(FirstMs(policy, Missing(clock, OriginRole::kOwner), false, takeover, Action::kFetch) ==
        1500);
  CHECK(FirstMs(policy, Missing(clock, OriginRole::kNoRing), false, takeover, Action::kFetch) ==
        3000);
  CHECK(FirstMs(policy, Missing(clock, OriginRole::kOther, 1), false, takeover, Action::kFetch) ==
        1500 + 8000);
  CHECK(FirstMs(policy, Missing(clock, OriginRole::kOther, 2), false, takeover, Action::kFetch) ==
        1500 + 16000);
  // Never later than 30 s, however low the rank.
  CHECK(FirstMs(policy, Missing(clock, OriginRole::kOther, 9), false, takeover, Action::kFetch) ==
        30000);
  CHECK(policy.LocalTurnMs({OriginRole::kOther, 9}, takeover) == 30000);
  // Without an origin, the pull only waits for peers.
  MissingChunk c = Missing(clock, OriginRole::kOwner);
  CHECK(policy.PullAction(c, false, /*has_origin=*/false, takeover,
                          clock.now + std::chrono::minutes(5)) == Action::kWait);
}

TEST_CASE("the local takeover timeout grows with the owners' share and how long fetches take",
          "[policy]") {
  MissingChunkOptions o;
  o.origin_fallback_ms = 3000;
  o.origin_parallelism = 4;
  MissingChunkPolicy policy(o);
  PullPace pace;
  pace.piece_size = 1 << 20;  // 1 MiB at an assumed 25 MB/s: 41.94 ms
  pace.total_chunks = 16;
  pace.owners = 4;  // 16 / 4 / 4: one round
  CHECK(policy.LocalTakeoverMs(pace) == 3000 + static_cast<int64_t>(8 * (1048576 / 25e3)));
  pace.fetch_ms = 500;  // timed: slower than assumed
  CHECK(policy.LocalTakeoverMs(pace) == 3000 + 8 * 500);
  pace.owners = 0;  // no ring: one owner, four rounds
  CHECK(policy.LocalTakeoverMs(pace) == 3000 + 20 * 500);
  pace.total_chunks = 1000;
  CHECK(policy.LocalTakeoverMs(pace) == MissingChunkPolicy::kMaxLocalTakeoverMs);
}

TEST_CASE("a pull that lost the tracker tries it again every 5 s", "[policy]") {
  MissingChunkPolicy policy;
  FakeClock clock;
  const auto lost = clock.now;
  clock.Advance(4999);
  CHECK_FALSE(policy.MayReconnect(lost, clock.now));
  clock.Advance(1);
  CHECK(policy.MayReconnect(lost, clock.now));
}

TEST_CASE("a read waits for the tracker's first reply, then read_origin_wait_ms for a peer",
          "[policy]") {
  MissingChunkOptions o;
  o.read_origin_wait_ms = 500;
  o.read_tracker_wait_ms = 400;
  MissingChunkPolicy policy(o);
  FakeClock clock;
  const auto added = clock.now;
  clock.Advance(399);
  CHECK(policy.ReadAwaitsTracker(-1, 0, added, clock.now));
  CHECK_FALSE(policy.ReadAwaitsTracker(-1, 1, added, clock.now));  // a peer is here already
  CHECK_FALSE(policy.ReadAwaitsTracker(3, 0, added, clock.now));   // the tracker answered
  clock.Advance(1);
  CHECK_FALSE(policy.ReadAwaitsTracker(-1, 0, added, clock.now));

  CHECK(policy.ReadFetchDue(/*alone=*/true, clock.now, clock.now));
  CHECK_FALSE(policy.ReadFetchDue(false, clock.Ago(499), clock.now));
  CHECK(policy.ReadFetchDue(false, clock.Ago(500), clock.now));
}

TEST_CASE("a read asks owners every 3 s and reads the origin itself after 30 s", "[policy]") {
  MissingChunkPolicy policy;
  FakeClock clock;
  CHECK(policy.AskDue(std::nullopt, clock.now));
  CHECK_FALSE(policy.AskDue(clock.Ago(2999), clock.now));
  CHECK(policy.AskDue(clock.Ago(3000), clock.now));
  CHECK_FALSE(policy.ReadOwnersLate(clock.Ago(29999), clock.now));
  CHECK(policy.ReadOwnersLate(clock.Ago(30000), clock.now));
}

TEST_CASE("the tracker waits for an ordered owner twice the slowest fetch plus 2 s, 3 to 60 s",
          "[policy]") {
  CHECK(MissingChunkPolicy::OrderTakeoverMs(std::nullopt) == 60000);
  CHECK(MissingChunkPolicy::OrderTakeoverMs(std::nullopt) ==
        MissingChunkPolicy::kMaxOrderTakeoverMs);
  CHECK(MissingChunkPolicy::OrderTakeoverMs(100) == 3000);
  CHECK(MissingChunkPolicy::OrderTakeoverMs(1600) == 2 * 1600 + 2000);
  CHECK(MissingChunkPolicy::OrderTakeoverMs(40000) == 60000);
}

TEST_CASE("alone means the tracker named no other peer and none is connected", "[policy]") {
  CHECK(MissingChunkPolicy::Alone(0, 0));
  CHECK_FALSE(MissingChunkPolicy::Alone(-1, 0));  // no reply yet
  CHECK_FALSE(MissingChunkPolicy::Alone(0, 1));
  CHECK_FALSE(MissingChunkPolicy::Alone(2, 0));
}
