// In-memory stand-ins for what the fetch scheduler depends on, so tests
// (and simulations) can run it without RPC, LevelDB or an origin.
#ifndef SHOAL_TESTS_TRACKER_FAKE_AGENTS_H_
#define SHOAL_TESTS_TRACKER_FAKE_AGENTS_H_

#include <kj/async.h>

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/kj_status.h"
#include "scheduler/agent_orders.h"
#include "scheduler/version_chunks.h"

namespace shoal::tracker {

// Chunk sets of versions added by the test; counts loads.
class InMemoryVersionChunks final : public VersionChunkSource {
 public:
  void Add(const FetchTarget& t, const std::vector<ChunkId>& chunks) {
    sets_[Key(t)] = std::make_shared<const ChunkSet>(chunks.begin(), chunks.end());
  }
  Result<std::shared_ptr<const ChunkSet>> Load(const FetchTarget& t) override {
    ++loads;
    auto it = sets_.find(Key(t));
    if (it == sets_.end())
      return Status::NotFound("no version " + t.version.ShortHex() + " in " + t.ns + "/" + t.name);
    return it->second;
  }
  int loads = 0;

 private:
  static std::string Key(const FetchTarget& t) {
    return t.ns + "/" + t.name + ":" + t.version.ToHex();
  }
  std::map<std::string, std::shared_ptr<const ChunkSet>> sets_;
};

// Agents that record every order and hold its answer until the test gives
// it. Disconnecting an agent fails its held orders, as a dropped control
// connection does.
class FakeAgents final : public AgentOrders {
 public:
  struct Order {
    std::string agent;
    FetchTarget target;
    ChunkId chunk;
    bool takeover = false;
    kj::Own<kj::PromiseFulfiller<FetchOutcome>> answer;
  };

  void Connect(const std::string& agent) { connected_.insert(agent); }
  void Disconnect(const std::string& agent) {
    connected_.erase(agent);
    for (auto it = held.begin(); it != held.end();) {
      if (it->agent != agent) {
        ++it;
        continue;
      }
      it->answer->reject(
          ExceptionFromStatus(Status::Unavailable("agent " + agent + " disconnected")));
      it = held.erase(it);
    }
  }

  bool Connected(const std::string& agent) const override { return connected_.count(agent) != 0; }
  size_t connected() const override { return connected_.size(); }

  kj::Promise<FetchOutcome> Fetch(const std::string& agent, const FetchTarget& target,
                                  const ChunkId& chunk, bool takeover) override {
    auto paf = kj::newPromiseAndFulfiller<FetchOutcome>();
    sent.push_back({agent, chunk});
    held.push_back({agent, target, chunk, takeover, kj::mv(paf.fulfiller)});
    return kj::mv(paf.promise);
  }
  kj::Promise<void> Replicate(const std::string& agent, const FetchTarget&,
                              const ChunkId& chunk) override {
    replicated.push_back({agent, chunk});
    return kj::READY_NOW;
  }
  kj::Promise<void> Prefetch(const std::string& agent, const FetchTarget&) override {
    prefetched.push_back(agent);
    return kj::READY_NOW;
  }

  // Answers the oldest held order: fetched from the origin, or failed.
  void Deliver(uint64_t bytes = 4 << 20) {
    Order o = PopFront();
    o.answer->fulfill(FetchOutcome{1, bytes});
  }
  void Fail(const Status& why) {
    Order o = PopFront();
    o.answer->reject(ExceptionFromStatus(why));
  }
  // Held orders per agent.
  std::map<std::string, size_t> HeldPerAgent() const {
    std::map<std::string, size_t> n;
    for (const Order& o : held) ++n[o.agent];
    return n;
  }

  std::deque<Order> held;                                   // unanswered fetch orders, oldest first
  std::vector<std::pair<std::string, ChunkId>> sent;        // every fetch order, in order
  std::vector<std::pair<std::string, ChunkId>> replicated;  // every replica order
  std::vector<std::string> prefetched;

 private:
  Order PopFront() {
    Order o = kj::mv(held.front());
    held.pop_front();
    return o;
  }
  std::set<std::string> connected_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TESTS_TRACKER_FAKE_AGENTS_H_
