// TrackerLink against a fake tracker (fake_tracker.h) over real sockets on
// 127.0.0.1: the link registers and follows the ring, takes revocations
// from heartbeats, serves the tracker's fetch orders through its handlers,
// and registers again when the tracker comes back.
#include "daemon/tracker_link.h"

#include <kj/async-io.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/fake_tracker.h"
#include "shoal/sha256.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

using std::chrono::milliseconds;

// Polls `cond` every 10 ms; false if it is still false after `timeout`.
template <typename F>
bool Within(milliseconds timeout, F cond) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return cond();
}

// What the link's handlers heard.
struct Heard {
  struct Fetch {
    std::string ns, name;
    VersionId version;
    std::vector<ChunkId> chunks;
    bool takeover = false;
  };
  std::mutex mu;
  std::vector<Fetch> fetches;  // protected by mu
  std::atomic<int> registered_again{0};

  std::vector<Fetch> Fetches() {
    std::lock_guard<std::mutex> lock(mu);
    return fetches;
  }
};

// Handlers that record what they get. A fetch answers one 4 KiB chunk
// per chunk ordered, and fails for the namespace "broken".
ControlHandlers RecordingHandlers(Heard& heard) {
  ControlHandlers h;
  h.stats = [] { return AgentStats{}; };
  h.fetch = [&heard](const std::string& ns, const std::string& name, const VersionId& version,
                     const std::vector<ChunkId>& chunks,
                     bool takeover) -> Result<FetchOrderResult> {
    {
      std::lock_guard<std::mutex> lock(heard.mu);
      heard.fetches.push_back({ns, name, version, chunks, takeover});
    }
    if (ns == "broken") return Status::NotFound("chunk is not in the origin (fake origin)");
    return FetchOrderResult{static_cast<uint32_t>(chunks.size()), 4096 * chunks.size()};
  };
  h.registered_again = [&heard] { heard.registered_again++; };
  return h;
}

AgentOptions LinkOptions() {
  AgentOptions o;
  o.name = "node-a";
  o.zone = "zone-1";
  o.token = "agent-token";
  o.cache_bytes = 5ull << 30;
  o.labels = {"gpu=h100"};
  return o;
}

constexpr uint16_t kPeerPort = 6999;

// A TrackerLink running on a kj loop on a thread of its own until destroyed.
class LinkRunner {
 public:
  LinkRunner(std::string address, ControlHandlers handlers, RevocationList& revocations,
             LinkHooks hooks = {})
      : thread_([this, address, handlers, &revocations, hooks] {
          auto io = kj::setupAsyncIo();
          TrackerEndpoint tracker;
          tracker.address = address;
          TrackerLink link(io, options_, tracker, kPeerPort, handlers, revocations, hooks);
          auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
          {
            std::lock_guard<std::mutex> lock(mu_);
            link_ = &link;
            stop_ = kj::mv(stop.fulfiller);
          }
          cv_.notify_all();
          stop.promise.exclusiveJoin(link.Run()).wait(io.waitScope);
          std::lock_guard<std::mutex> lock(mu_);
          link_ = nullptr;
        }) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return link_ != nullptr; });
  }
  ~LinkRunner() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_->fulfill();
    }
    thread_.join();
  }

  // Its accessors are safe from any thread.
  TrackerLink& link() { return *link_; }

 private:
  const AgentOptions options_ = LinkOptions();
  std::mutex mu_;
  std::condition_variable cv_;
  TrackerLink* link_ = nullptr;                          // protected by mu_
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_;  // protected by mu_
  std::thread thread_;                                   // last: started once the rest is set
};

FakeTracker::Options TwoAgents() {
  FakeTracker::Options o;
  o.ring = {{"agent-1", 100}, {"agent-9", 300}};
  return o;
}

std::vector<std::string> MemberIds(const HashRing& ring) {
  std::vector<std::string> ids;
  for (const RingMember& m : ring.members()) ids.push_back(m.id);
  return ids;
}

ChunkId SomeChunk(int i) {
  const std::string s = "chunk " + std::to_string(i);
  return ChunkId::From(Sha256::Of(s.data(), s.size()));
}

}  // namespace

TEST_CASE("the link registers with the tracker and takes its ID and ring", "[link]") {
  FakeTracker fake(TwoAgents());
  RevocationList revocations;
  Heard heard;
  LinkRunner runner(fake.address(), RecordingHandlers(heard), revocations);
  TrackerLink& link = runner.link();

  REQUIRE(Within(milliseconds(5000), [&] { return link.registered() && link.ring() != nullptr; }));
  CHECK(link.agent_id() == "agent-1");
  CHECK(link.epoch() == 1);
  std::shared_ptr<const HashRing> ring = link.ring();
  CHECK(ring->epoch() == 1);
  CHECK(MemberIds(*ring) == std::vector<std::string>{"agent-1", "agent-9"});
  CHECK(ring->members()[1].weight == 300);
  CHECK(link.ring_current());
  CHECK(fake.ring_calls() == std::vector<uint64_t>{0});  // one snapshot, for a new session

  // The registration says who the agent is and how to reach it.
  auto regs = fake.registrations();
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].token == "agent-token");
  CHECK(regs[0].name == "node-a");
  CHECK(regs[0].zone == "zone-1");
  CHECK(regs[0].peer_port == kPeerPort);
  CHECK(regs[0].cache_bytes == (5ull << 30));
  CHECK(regs[0].labels == std::vector<std::string>{"gpu=h100"});
  CHECK(regs[0].peer_key.find("PUBLIC KEY") != std::string::npos);
  CHECK(heard.registered_again.load() == 0);

  // It heartbeats at the interval the tracker gave (100 ms).
  CHECK(Within(milliseconds(3000), [&] { return fake.heartbeats().size() >= 3; }));
}

TEST_CASE("a heartbeat's ring delta and a bare new epoch both bring the ring up to date",
          "[link]") {
  FakeTracker fake(TwoAgents());
  RevocationList revocations;
  Heard heard;
  LinkRunner runner(fake.address(), RecordingHandlers(heard), revocations);
  TrackerLink& link = runner.link();
  REQUIRE(Within(milliseconds(5000), [&] { return link.ring() != nullptr; }));

  // A member joins: the next heartbeat carries the change itself.
  fake.JoinRing("agent-5", 200);
  REQUIRE(Within(milliseconds(3000), [&] { return link.ring()->epoch() == 2; }));
  CHECK(MemberIds(*link.ring()) == std::vector<std::string>{"agent-1", "agent-5", "agent-9"});
  CHECK(link.epoch() == 2);
  CHECK(link.ring_current());
  CHECK(fake.ring_calls().size() == 1);  // no ring() call was needed

  // A member leaves and the heartbeat tells only the epoch: the link asks
  // ring() for the changes since the epoch it holds.
  fake.SetHeartbeatDeltas(false);
  fake.LeaveRing("agent-9");
  REQUIRE(Within(milliseconds(3000), [&] { return link.ring()->epoch() == 3; }));
  CHECK(MemberIds(*link.ring()) == std::vector<std::string>{"agent-1", "agent-5"});
  CHECK(fake.ring_calls() == std::vector<uint64_t>{0, 2});
  CHECK(link.ring_current());

  // Each heartbeat named the epoch the link held.
  std::vector<FakeHeartbeat> beats = fake.heartbeats();
  REQUIRE(!beats.empty());
  CHECK(beats.front().ring_seen == 1);
  CHECK(Within(milliseconds(3000), [&] { return fake.heartbeats().back().ring_seen == 3; }));
}

TEST_CASE("heartbeats bring the tracker's revocations into the agent's list", "[link]") {
  FakeTracker fake(TwoAgents());
  RevocationList revocations;
  Heard heard;
  LinkRunner runner(fake.address(), RecordingHandlers(heard), revocations);
  REQUIRE(Within(milliseconds(5000), [&] { return runner.link().registered(); }));
  // The first heartbeat takes the fake's (empty) list as a reset, from its source.
  REQUIRE(
      Within(milliseconds(3000), [&] { return revocations.source() == fake.revocation_source(); }));
  CHECK(revocations.generation() == 0);

  TokenClaims stolen;
  stolen.id = "0123456789abcdef";
  stolen.subject = "ci";
  stolen.namespaces = {"team-a"};
  stolen.issued_at_ms = 1000;
  stolen.expires_at_ms = INT64_MAX;
  REQUIRE(revocations.Check(stolen).ok());

  Revocation r;
  r.seq = 1;
  r.kind = Revocation::Kind::kTokenId;
  r.value = stolen.id;
  r.at_ms = 5000;
  r.by = "alice";
  fake.Revoke(r);
  REQUIRE(Within(milliseconds(3000), [&] { return revocations.generation() == 1; }));
  Status refused = revocations.Check(stolen);
  CHECK(refused.code() == Status::Code::kUnauthenticated);
  CHECK_THAT(refused.message(), Catch::Contains("0123456789abcdef"));
  stolen.id = "fedcba9876543210";  // another token of the subject lives on
  CHECK(revocations.Check(stolen).ok());

  // The next heartbeats say what the agent holds, so only newer ones come.
  CHECK(Within(milliseconds(3000), [&] {
    FakeHeartbeat last = fake.heartbeats().back();
    return last.revocations_seen == 1 && last.revocations_source == fake.revocation_source();
  }));
}

TEST_CASE("a link whose fleet says it takes no revocations leaves the list alone", "[link]") {
  FakeTracker fake(TwoAgents());
  Revocation r;
  r.seq = 1;
  r.value = "0123456789abcdef";
  r.by = "alice";
  fake.Revoke(r);
  RevocationList revocations;
  Heard heard;
  LinkHooks hooks;
  hooks.takes_revocations = [] { return false; };
  LinkRunner runner(fake.address(), RecordingHandlers(heard), revocations, hooks);
  REQUIRE(Within(milliseconds(5000), [&] { return fake.heartbeats().size() >= 3; }));
  CHECK(revocations.generation() == 0);
  CHECK(revocations.source() == 0);
}

TEST_CASE("the tracker's fetch order reaches the handler, and its answer or error comes back",
          "[link]") {
  FakeTracker fake(TwoAgents());
  RevocationList revocations;
  Heard heard;
  LinkRunner runner(fake.address(), RecordingHandlers(heard), revocations);
  REQUIRE(Within(milliseconds(5000), [&] { return runner.link().registered(); }));

  const VersionId version = VersionId::From(Sha256::Of("v1", 2));
  const std::vector<ChunkId> chunks = {SomeChunk(1), SomeChunk(2), SomeChunk(3)};
  FakeOrderResult got = fake.OrderFetch("team-a", "llama", version, chunks, true);
  REQUIRE(got.ok);
  CHECK(got.fetched == 3);
  CHECK(got.bytes == 3 * 4096);
  auto fetches = heard.Fetches();
  REQUIRE(fetches.size() == 1);
  CHECK(fetches[0].ns == "team-a");
  CHECK(fetches[0].name == "llama");
  CHECK(fetches[0].version == version);
  CHECK(fetches[0].chunks == chunks);
  CHECK(fetches[0].takeover);

  // The handler's error reaches the tracker as the call's error, with its words.
  FakeOrderResult failed = fake.OrderFetch("broken", "llama", version, {SomeChunk(4)}, false);
  CHECK_FALSE(failed.ok);
  CHECK_THAT(failed.error, Catch::Contains("chunk is not in the origin (fake origin)"));
  REQUIRE(heard.Fetches().size() == 2);
  CHECK_FALSE(heard.Fetches()[1].takeover);
  // The link serves on: a later order is answered.
  CHECK(fake.OrderFetch("team-a", "llama", version, {SomeChunk(5)}, false).fetched == 1);
}

TEST_CASE("the link notices the tracker going away and registers again when it comes back",
          "[link]") {
  auto first = std::make_unique<FakeTracker>(TwoAgents());
  const uint16_t port = first->port();
  RevocationList revocations;
  Heard heard;
  LinkRunner runner(first->address(), RecordingHandlers(heard), revocations);
  TrackerLink& link = runner.link();
  REQUIRE(Within(milliseconds(5000), [&] { return link.registered() && link.ring() != nullptr; }));

  first->Stop();
  CHECK(Within(milliseconds(3000), [&] { return !link.registered(); }));
  CHECK(link.ring() != nullptr);  // kept, stale, while the tracker is away
  CHECK(heard.registered_again.load() == 0);
  first.reset();

  FakeTracker::Options back = TwoAgents();
  back.port = port;
  back.agent_id = "agent-1b";
  FakeTracker second(back);
  REQUIRE(Within(milliseconds(8000), [&] { return link.registered(); }));
  CHECK(link.agent_id() == "agent-1b");
  CHECK(heard.registered_again.load() == 1);
  CHECK(second.registrations().size() == 1);
  // The new session's ring is fetched whole (ring_current() alone could
  // still read the old session's ring for a moment after registering), and
  // orders reach the agent again.
  CHECK(Within(milliseconds(3000),
               [&] { return !second.ring_calls().empty() && link.ring_current(); }));
  CHECK(second.ring_calls() == std::vector<uint64_t>{0});
  CHECK(second.OrderFetch("team-a", "llama", VersionId(), {SomeChunk(1)}, false).ok);
}
