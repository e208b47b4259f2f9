#include "agent_directory.h"

#include <catch2/catch.hpp>
#include <map>

using namespace shoal;
using namespace shoal::tracker;

namespace {
AgentRecord Agent(const std::string& id, uint64_t weight, uint64_t session = 1) {
  AgentRecord r;
  r.id = id;
  r.cache_bytes = weight;
  r.session = session;
  return r;
}

// What an agent holding the ring at `since` has after asking for it.
std::map<std::string, uint64_t> Follow(AgentDirectory& d, std::map<std::string, uint64_t> held,
                                       uint64_t since, int64_t now, bool* was_delta) {
  RingView v = d.Ring(since, now);
  *was_delta = v.delta;
  if (!v.delta) held.clear();
  for (const std::string& id : v.left) held.erase(id);
  for (const RingMember& m : *v.members) held[m.id] = m.weight;
  return held;
}
}  // namespace

TEST_CASE("an agent following the ring gets only the changes, and ends with every member",
          "[directory]") {
  AgentDirectory d(2000);
  for (int i = 0; i < 100; ++i) d.Join(Agent("a" + std::to_string(i), 10), 0);
  bool delta = false;
  std::map<std::string, uint64_t> held = Follow(d, {}, 0, 0, &delta);
  CHECK_FALSE(delta);
  CHECK(held.size() == 100);
  const uint64_t since = d.epoch();

  d.Leave("a1", 1);
  d.Leave("a2", 2);               // another session's: no change
  d.Join(Agent("a3", 99, 2), 0);  // registered again, new weight
  d.Join(Agent("new", 5), 0);
  d.Join(Agent("flash", 5), 0);
  d.Leave("flash", 1);  // joined and left between two asks
  RingView v = d.Ring(since, 0);
  CHECK(v.delta);
  CHECK(v.members->size() == 2);  // a3 and new
  CHECK(v.left.size() == 2);      // a1 and flash
  held = Follow(d, held, since, 0, &delta);
  RingView all = d.Ring(0, 0);
  CHECK_FALSE(all.delta);
  std::map<std::string, uint64_t> truth;
  for (const RingMember& m : *all.members) truth[m.id] = m.weight;
  CHECK(held == truth);
  CHECK(truth.size() == 100);
  CHECK(truth["a3"] == 99);
}

TEST_CASE("the ring falls back to every member when the changes are not all logged",
          "[directory]") {
  AgentDirectory d(2000);
  d.Join(Agent("stay", 1), 0);
  d.Join(Agent("stay-too", 1), 0);
  const uint64_t since = d.epoch();
  for (size_t i = 0; i < AgentDirectory::kRingLogSize + 10; ++i)
    d.Join(Agent("churn", i + 1), 0);  // the same agent, again and again
  RingView v = d.Ring(since, 0);
  CHECK_FALSE(v.delta);
  CHECK(v.members->size() == 3);
  // An epoch from another tracker's numbering, ahead of this one: everyone.
  CHECK_FALSE(d.Ring(d.epoch() + 5, 0).delta);
  // Silent agents leave, and the delta says so.
  const uint64_t before = d.epoch();
  d.Join(Agent("quiet", 1), 0);
  d.Heartbeat("stay", {}, 10000);
  d.Heartbeat("stay-too", {}, 10000);
  d.Heartbeat("churn", {}, 10000);
  RingView later = d.Ring(before, 10000);  // "quiet" missed three heartbeats
  REQUIRE(later.delta);
  CHECK(later.members->empty());
  CHECK(later.left == std::vector<std::string>{"quiet"});
}
