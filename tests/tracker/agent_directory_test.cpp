#include "agents/agent_directory.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>

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

// Members by id, with their weights.
std::map<std::string, uint64_t> AsMap(const std::vector<RingMember>& members) {
  std::map<std::string, uint64_t> out;
  for (const RingMember& m : members) out[m.id] = m.weight;
  return out;
}
}  // namespace

TEST_CASE("an agent following the ring gets only the changes, and ends with every member",
          "[directory]") {
  AgentDirectory d(2000);
  for (int i = 0; i < 100; ++i) d.Join(Agent("a" + std::to_string(i), 10), 0);
  uint64_t epoch = 0;
  std::shared_ptr<const std::vector<RingMember>> first = d.RingMembers(0, &epoch);
  HashRing held(*first, epoch);
  CHECK(held.size() == 100);
  RingChangeList none;
  CHECK_FALSE(d.RingChanges(0, 0, none));  // 0: a new session asks for everyone

  d.Leave("a1", 1);
  d.Leave("a2", 2);               // another session's: no change
  d.Join(Agent("a3", 99, 2), 0);  // registered again, new weight
  d.Join(Agent("new", 5), 0);
  d.Join(Agent("flash", 5), 0);
  d.Leave("flash", 1);  // joined and left between two asks
  RingChangeList got;
  REQUIRE(d.RingChanges(held.epoch(), 0, got));
  CHECK(got.changes.size() == 5);
  CHECK(got.epoch == d.epoch());
  HashRing followed = held.Apply(got.changes, got.epoch);
  std::map<std::string, uint64_t> truth = AsMap(*d.RingMembers(0, &epoch));
  CHECK(AsMap(followed.members()) == truth);
  CHECK(truth.size() == 100);
  CHECK(truth["a3"] == 99);
  CHECK(truth.count("a1") == 0);
}

TEST_CASE("a member that left and came back as it was is no net change", "[directory]") {
  AgentDirectory d(2000);
  for (int i = 0; i < 100; ++i) d.Join(Agent("a" + std::to_string(i), 10), 0);
  const uint64_t since = d.epoch();
  uint64_t epoch = 0;
  HashRing held(*d.RingMembers(0, &epoch), epoch);
  d.Leave("a1", 1);
  d.Join(Agent("a1", 10, 2), 0);  // an agent restarting: back as it was
  d.Leave("a2", 1);
  d.Join(Agent("a2", 20, 2), 0);  // back with another weight
  d.Leave("a3", 1);               // gone
  d.Join(Agent("new", 5), 0);
  d.Join(Agent("flash", 5), 0);
  d.Leave("flash", 1);            // came and went: a departure of no one, harmless
  d.Join(Agent("a4", 10, 2), 0);  // registered again without leaving
  RingChangeList every, net;
  REQUIRE(d.RingChanges(since, 0, every, AgentDirectory::Detail::kEvery));
  REQUIRE(d.RingChanges(since, 0, net, AgentDirectory::Detail::kNet));
  CHECK(every.changes.size() == 9);
  CHECK(net.changes.size() == 5);
  for (const RingChange& c : net.changes) CHECK(c.id != "a1");
  CHECK(net.epoch == d.epoch());
  const auto truth = AsMap(*d.RingMembers(0, &epoch));
  CHECK(AsMap(held.Apply(net.changes, net.epoch).members()) == truth);
  CHECK(AsMap(held.Apply(every.changes, every.epoch).members()) == truth);
  // From an epoch after a1 left, its return is a change.
  RingChangeList later;
  REQUIRE(d.RingChanges(since + 1, 0, later, AgentDirectory::Detail::kNet));
  CHECK(later.changes.front().id == "a1");
  CHECK_FALSE(later.changes.front().left);
}

TEST_CASE("net ring changes from any epoch end at the members, past the log's wrap",
          "[directory]") {
  AgentDirectory d(2000);
  std::mt19937 rng(7);
  // Holders of the ring at past epochs, as agents following at their own pace.
  std::map<uint64_t, HashRing> held;
  uint64_t sessions = 1;
  std::map<std::string, uint64_t> session_of;
  for (int i = 0; i < 400; ++i) {
    const std::string id = "a" + std::to_string(i);
    session_of[id] = sessions;
    d.Join(Agent(id, 10, sessions++), 0);
  }
  const size_t steps = AgentDirectory::kRingLogSize + 4000;
  for (size_t step = 0; step < steps; ++step) {
    const std::string id = "a" + std::to_string(rng() % 420);  // some ids not yet members
    if (rng() % 2 == 0) {
      d.Leave(id, session_of[id]);
    } else {
      session_of[id] = sessions;
      d.Join(Agent(id, 10 + rng() % 2, sessions++), 0);
    }
    if (step % 97 == 0) {
      uint64_t epoch = 0;
      held.emplace(d.epoch(), HashRing(*d.RingMembers(0, &epoch), epoch));
    }
    if (step % 13 != 0 || held.empty()) continue;
    uint64_t epoch = 0;
    const auto truth = AsMap(*d.RingMembers(0, &epoch));
    // A holder from far back: the log may no longer cover it.
    auto h = held.begin();
    std::advance(h, static_cast<long>(rng() % held.size()));
    RingChangeList net;
    if (!d.RingChanges(h->first, 0, net, AgentDirectory::Detail::kNet)) continue;
    REQUIRE(net.epoch == d.epoch());
    HashRing followed = h->second.Apply(net.changes, net.epoch);
    REQUIRE(AsMap(followed.members()) == truth);
    held.erase(h);
    held.emplace(followed.epoch(), followed);
  }
}

TEST_CASE("the ring falls back to every member when the changes are not all logged",
          "[directory]") {
  AgentDirectory d(2000);
  d.Join(Agent("stay", 1), 0);
  d.Join(Agent("stay-too", 1), 0);
  const uint64_t since = d.epoch();
  for (size_t i = 0; i < AgentDirectory::kRingLogSize + 10; ++i)
    d.Join(Agent("churn", i + 1), 0);  // the same agent, again and again
  RingChangeList c;
  CHECK_FALSE(d.RingChanges(since, 0, c));
  CHECK(c.changes.empty());
  // An epoch from another tracker's numbering, ahead of this one.
  CHECK_FALSE(d.RingChanges(d.epoch() + 5, 0, c));
  // Silent agents leave, and the changes say so.
  const uint64_t before = d.epoch();
  d.Join(Agent("quiet", 1), 0);
  d.Heartbeat("stay", {}, 10000);
  d.Heartbeat("stay-too", {}, 10000);
  d.Heartbeat("churn", {}, 10000);
  RingChangeList later;
  REQUIRE(d.RingChanges(before, 10000, later));  // "quiet" missed three heartbeats
  REQUIRE(later.changes.size() == 2);
  CHECK(later.changes[1].id == "quiet");
  CHECK(later.changes[1].left);
}

TEST_CASE("an agent away from home is kept for three of its own, longer heartbeats",
          "[directory]") {
  AgentDirectory d(2000);
  AgentRecord home = Agent("home", 1);
  AgentRecord away = Agent("away", 1);
  away.heartbeat_factor = 3;
  d.Join(home, 0);
  d.Join(away, 0);
  CHECK(d.Members(0)[0].heartbeat_ms == 6000);  // "away" sorts first
  CHECK(d.Members(0)[1].heartbeat_ms == 2000);  // the directory's own interval
  CHECK_FALSE(d.Contains("home", 6001));
  CHECK(d.Contains("away", 6001));
  CHECK(d.Contains("away", 18000));
  CHECK_FALSE(d.Contains("away", 18001));
  CHECK(d.Members(18001).empty());
}

TEST_CASE("the directory counts its members and those away without copying them", "[directory]") {
  AgentDirectory d(2000);
  d.Join(Agent("home-1", 1), 0);
  d.Join(Agent("home-2", 1), 0);
  AgentRecord away = Agent("away", 1);
  away.heartbeat_factor = 3;
  d.Join(away, 0);
  AgentDirectory::Counts c = d.Count(0);
  CHECK(c.members == 3);
  CHECK(c.away == 1);
  // Past three home heartbeats, only the away member is still live.
  c = d.Count(7000);
  CHECK(c.members == 1);
  CHECK(c.away == 1);
}

TEST_CASE("a large fleet is told longer heartbeat intervals and is held to three of them",
          "[directory]") {
  // 100 heartbeats a second: 200 agents at 2 s, 1,000 at 10 s.
  AgentDirectory d(2000, 100);
  int64_t told = 0;
  d.Join(Agent("agent-0", 1), 0, &told);
  CHECK(told == 2000);
  for (int i = 1; i < 1000; ++i) d.Join(Agent("agent-" + std::to_string(i), 1), 0, &told);
  CHECK(told == 10000);  // 1,000 heartbeats at 100 a second: 10 s
  CHECK(d.IntervalMs() == 10000);

  // An agent that follows is told the interval with its heartbeat, and is
  // dropped only after three of it.
  int64_t next = 0;
  REQUIRE(d.Heartbeat("agent-0", AgentStats{}, 1000, 2000, &next));
  CHECK(next == 10000);
  CHECK(d.Contains("agent-0", 1000 + 30000));
  CHECK_FALSE(d.Contains("agent-0", 1000 + 30001));

  // An older agent (waited 0) keeps the interval it joined with, and is
  // held to that one.
  REQUIRE(d.Heartbeat("agent-0", AgentStats{}, 2000, 0, &next));
  CHECK(next == 10000);  // unchanged since it followed once
  REQUIRE(d.Heartbeat("agent-1", AgentStats{}, 2000, 0, &next));
  CHECK(next == 2000);  // it joined when the fleet was small

  // Away members count a third: 600 leave and 300 away join, 400 + 100 beats.
  for (int i = 400; i < 1000; ++i) d.Leave("agent-" + std::to_string(i), 1);
  for (int i = 0; i < 300; ++i) {
    AgentRecord away = Agent("away-" + std::to_string(i), 1);
    away.heartbeat_factor = 3;
    d.Join(away, 0, &told);
  }
  CHECK(told == 3 * 5000);  // (400 + 300 / 3) / 100 a second: 5 s, and three times that
  CHECK(d.IntervalMs() == 5000);

  // As the fleet shrinks, the interval comes back to 2 s.
  for (int i = 0; i < 400; ++i) d.Leave("agent-" + std::to_string(i), 1);
  for (int i = 0; i < 300; ++i) d.Leave("away-" + std::to_string(i), 1);
  CHECK(d.IntervalMs() == 2000);
}

TEST_CASE("without a heartbeat budget every member keeps the directory's interval", "[directory]") {
  AgentDirectory d(2000);
  int64_t told = 0;
  for (int i = 0; i < 5000; ++i) d.Join(Agent("agent-" + std::to_string(i), 1), 0, &told);
  CHECK(told == 2000);
  int64_t next = 0;
  REQUIRE(d.Heartbeat("agent-7", AgentStats{}, 10, 2000, &next));
  CHECK(next == 2000);
}
