// AgentSession.announceBatch against a real shoal-tracker, over raw RPC as
// an agent would call it: peers come back, torrents no published version
// holds are refused, the swarm limits hold, and every entry a session put
// in a swarm goes when the session does.
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "proto/kj_status.h"
#include "shoal/proto/tracker.capnp.h"
#include "support/announced_hash.h"
#include "support/published_file.h"
#include "support/test_cluster.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

// A control capability that answers nothing: these agents take no orders.
class NoControl final : public proto::AgentControl::Server {};

struct Entry {
  std::string info_hash;
  proto::SwarmEntry::State state = proto::SwarmEntry::State::SEEDING;
  uint16_t port = 7000;
  bool want_peers = true;
};

struct Reply {
  std::string error;
  std::string peers;  // compact IPv4
  uint32_t complete = 0, incomplete = 0;
};

// Raw agents registered over their own connections, on one event loop.
class RawAgents {
 public:
  explicit RawAgents(std::string address) : address_(std::move(address)) {}

  struct Agent {
    kj::Own<kj::AsyncIoStream> stream;
    kj::Own<capnp::TwoPartyClient> rpc;
    proto::AgentSession::Client session = nullptr;
    uint32_t told_ms = 0;  // the heartbeat interval it was told last
  };

  kj::Own<Agent> Register(const std::string& token, const std::string& name, uint16_t port) {
    auto a = kj::heap<Agent>();
    a->stream = io_.provider->getNetwork()
                    .parseAddress(address_)
                    .wait(io_.waitScope)
                    ->connect()
                    .wait(io_.waitScope);
    a->rpc = kj::heap<capnp::TwoPartyClient>(*a->stream);
    auto req = a->rpc->bootstrap().castAs<proto::Gateway>().registerAgentRequest();
    req.setToken(token);
    req.initInfo().setName(name);
    req.getInfo().setPeerPort(port);
    req.setControl(kj::heap<NoControl>());
    auto registered = req.send().wait(io_.waitScope);
    a->session = registered.getSession();
    a->told_ms = registered.getHeartbeatMs();
    return a;
  }

  // A heartbeat's error ("" if it was taken). `waited_ms` is the interval
  // the agent says it keeps (0: an older agent's, which keeps its first).
  std::string Heartbeat(Agent& a, uint32_t waited_ms = 0) {
    std::string error;
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                   auto req = a.session.heartbeatRequest();
                   req.initStats();
                   req.setHeartbeatMs(waited_ms);
                   a.told_ms = req.send().wait(io_.waitScope).getHeartbeatMs();
                 })) {
      error = StatusFromException(*e, "heartbeat").ToString();
    }
    return error;
  }
  // Lets the event loop carry what is pending (a closed connection, say).
  void Turn() { io_.provider->getTimer().afterDelay(200 * kj::MILLISECONDS).wait(io_.waitScope); }

  // The replies to one batch, or the error of the whole call ("" if none).
  std::vector<Reply> Batch(Agent& a, const std::vector<Entry>& entries, std::string* error) {
    auto req = a.session.announceBatchRequest();
    auto list = req.initEntries(static_cast<unsigned>(entries.size()));
    for (size_t i = 0; i < entries.size(); ++i) {
      auto e = list[static_cast<unsigned>(i)];
      e.setInfoHash(kj::arrayPtr(reinterpret_cast<const kj::byte*>(entries[i].info_hash.data()),
                                 entries[i].info_hash.size()));
      e.setState(entries[i].state);
      e.setLeft(entries[i].state == proto::SwarmEntry::State::DOWNLOADING ? 1000 : 0);
      e.setPort(entries[i].port);
      e.setNumwant(50);
      e.setWantPeers(entries[i].want_peers);
    }
    std::vector<Reply> out;
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                   auto r = req.send().wait(io_.waitScope);
                   for (auto in : r.getReplies()) {
                     out.push_back(Reply{in.getError(),
                                         std::string(in.getPeers().begin(), in.getPeers().end()),
                                         in.getComplete(), in.getIncomplete()});
                   }
                 })) {
      *error = StatusFromException(*e, "announceBatch").ToString();
    }
    return out;
  }

 private:
  const std::string address_;
  kj::AsyncIoContext io_ = kj::setupAsyncIo();
};

// A tracker alone on a folder origin, plain peers (no peer key to register).
struct BatchCluster : TestCluster {
  explicit BatchCluster(std::vector<std::string> flags = {})
      : TestCluster(Options(std::move(flags))) {}
  static ClusterOptions Options(std::vector<std::string> flags) {
    ClusterOptions options;
    options.tracker_flags = {"--peer-tls", "off", "--announce-interval", "1s"};
    options.tracker_flags.insert(options.tracker_flags.end(), flags.begin(), flags.end());
    return options;
  }
};

// Publishes the one-file model ns/m<seed>; returns the info-hash its
// torrent is announced under, and sets *ref to "ns/m<seed>:<version>".
std::string PublishFile(BatchCluster& c, const std::string& ns, unsigned seed,
                        std::string* ref = nullptr) {
  PublishedFile f = PublishOneFile(c, ns, seed, "m" + std::to_string(seed));
  if (ref != nullptr) *ref = f.ref;
  return f.info_hash;
}

// 127.0.0.1:port in compact form.
std::string Compact(uint16_t port) {
  return std::string("\x7f\x00\x00\x01", 4) + static_cast<char>(port >> 8) +
         static_cast<char>(port & 0xff);
}

// Waits up to `seconds` for the tracker's metric to equal `want`.
bool MetricBecomes(const TrackerProcess& t, const std::string& name, double want, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (t.Metric(name) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("a batch puts a session's torrents in their swarms and returns their peers",
          "[tracker][batch]") {
  BatchCluster c;
  const std::string one = PublishFile(c, "team-a", 1);
  const std::string two = PublishFile(c, "team-b", 2);
  RawAgents rpc(c.tracker.rpc_address());
  auto seeder = rpc.Register(c.agent_token, "seeder", 7001);
  auto leecher = rpc.Register(c.agent_token, "leecher", 7002);
  std::string error;

  auto seeded = rpc.Batch(*seeder, {{one}, {two}}, &error);
  REQUIRE(error.empty());
  REQUIRE(seeded.size() == 2);
  CHECK(seeded[0].error.empty());
  CHECK(seeded[1].error.empty());
  CHECK(seeded[0].peers.empty());  // a seeder alone has nobody to trade with

  Entry want{one, proto::SwarmEntry::State::DOWNLOADING, 7002, true};
  auto got = rpc.Batch(*leecher, {want}, &error);
  REQUIRE(error.empty());
  REQUIRE(got.size() == 1);
  CHECK(got[0].peers == Compact(7000));  // the port its entries gave
  CHECK(got[0].complete == 1);
  CHECK(got[0].incomplete == 1);

  // A torrent no published version holds is refused, the rest recorded.
  auto mixed = rpc.Batch(*leecher, {{std::string(20, 'z')}, {two}}, &error);
  REQUIRE(mixed.size() == 2);
  CHECK_THAT(mixed[0].error, Catch::Contains("not a file of any published version"));
  CHECK(mixed[1].error.empty());
  CHECK(c.tracker.Metric("shoal_tracker_swarm_held_peers") == 4);
  CHECK(c.tracker.Metric("shoal_tracker_announce_batches_total") == 3);
  CHECK(c.tracker.Metric("shoal_tracker_announce_batch_entries_total") == 5);
  CHECK(c.tracker.Metric("shoal_tracker_announces_refused_total{reason=\"torrent\"}") == 1);

  // Held entries need no re-announcing: they outlive three announce intervals.
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  CHECK(c.tracker.Metric("shoal_tracker_swarm_held_peers") == 4);

  // A stop removes one entry; the session's end removes all of its entries.
  rpc.Batch(*leecher, {{two, proto::SwarmEntry::State::STOPPED, 7002, false}}, &error);
  CHECK(c.tracker.Metric("shoal_tracker_swarm_held_peers") == 3);
  seeder = nullptr;
  CHECK(MetricBecomes(c.tracker, "shoal_tracker_swarm_held_peers", 1, 5));
  CHECK(c.tracker.Metric("shoal_tracker_swarms") == 1);
  got = rpc.Batch(*leecher, {want}, &error);
  REQUIRE(got.size() == 1);
  CHECK(got[0].peers.empty());
  CHECK(got[0].complete == 0);
}

TEST_CASE("a torrent whose version was deleted cannot be batched", "[tracker][batch][auth]") {
  BatchCluster c;
  std::string ref;
  const std::string one = PublishFile(c, "team-a", 3, &ref);
  auto del = c.Shoal(c.tracker.MintToken("*", "admin", "root"), {"rm", ref, "--force"});
  INFO(del.out << del.err);
  REQUIRE(del.exit_code == 0);
  RawAgents rpc(c.tracker.rpc_address());
  auto agent = rpc.Register(c.agent_token, "agent", 7001);
  std::string error;
  auto got = rpc.Batch(*agent, {{one}}, &error);
  REQUIRE(got.size() == 1);
  CHECK_THAT(got[0].error, Catch::Contains("not a file of any published version"));
  CHECK(c.tracker.Metric("shoal_tracker_swarms") == 0);
}

TEST_CASE("batches hold to the swarm limits and to their own size limit", "[tracker][batch]") {
  BatchCluster c({"--max-swarms", "1"});
  const std::string one = PublishFile(c, "team-a", 4);
  const std::string two = PublishFile(c, "team-a", 5);
  RawAgents rpc(c.tracker.rpc_address());
  auto agent = rpc.Register(c.agent_token, "agent", 7001);
  std::string error;
  auto got = rpc.Batch(*agent, {{one}, {two}}, &error);
  REQUIRE(got.size() == 2);
  CHECK(got[0].error.empty());
  CHECK_THAT(got[1].error, Catch::Contains("limit of 1 swarms"));

  std::vector<Entry> huge(4097, Entry{one});
  got = rpc.Batch(*agent, huge, &error);
  CHECK_THAT(error, Catch::Contains("more than 4096"));
  CHECK(got.empty());
  std::vector<Entry> full(4096, Entry{one});
  error.clear();
  got = rpc.Batch(*agent, full, &error);
  CHECK(error.empty());
  CHECK(got.size() == 4096);
  CHECK(c.tracker.Metric("shoal_tracker_swarm_held_peers") == 1);
}

TEST_CASE("an agent that stops heartbeating loses its entries though its connection stays",
          "[tracker][batch]") {
  BatchCluster c;
  const std::string one = PublishFile(c, "team-a", 6);
  RawAgents rpc(c.tracker.rpc_address());
  auto silent = rpc.Register(c.agent_token, "silent", 7001);
  std::string error;
  rpc.Batch(*silent, {{one}}, &error);
  REQUIRE(error.empty());
  CHECK(c.tracker.Metric("shoal_tracker_swarm_held_peers") == 1);
  // Three missed heartbeats (2 s each) and a sweep later, the entry is gone.
  CHECK(MetricBecomes(c.tracker, "shoal_tracker_swarm_held_peers", 0, 10));
  rpc.Batch(*silent, {{one}}, &error);
  CHECK_THAT(error, Catch::Contains("missed its heartbeats"));
}

TEST_CASE("a tracker past its heartbeat budget tells agents a longer interval and holds them to it",
          "[tracker][batch]") {
  BatchCluster c({"--heartbeat-budget", "2"});  // 2 heartbeats a second: 2 s up to 4 agents
  RawAgents rpc(c.tracker.rpc_address());
  auto older = rpc.Register(c.agent_token, "older", 7001);
  CHECK(older->told_ms == 2000);
  std::vector<kj::Own<RawAgents::Agent>> others;
  for (int i = 0; i < 7; ++i) {
    others.push_back(rpc.Register(c.agent_token, "agent-" + std::to_string(i), 7002 + i));
  }
  CHECK(others.back()->told_ms == 4000);  // 8 agents at 2 a second
  CHECK(c.tracker.Metric("shoal_tracker_heartbeat_interval_seconds") == 4);

  // An agent that follows is told 4 s with its heartbeat; one that keeps
  // the 2 s it joined with (it sends no interval) is held to that.
  auto& follower = *others.front();
  REQUIRE(rpc.Heartbeat(follower, follower.told_ms).empty());
  CHECK(follower.told_ms == 4000);
  REQUIRE(rpc.Heartbeat(*older).empty());
  CHECK(older->told_ms == 2000);
  // 7 s on: past three of 2 s, within three of 4 s.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  CHECK(rpc.Heartbeat(follower, follower.told_ms).empty());
  CHECK_THAT(rpc.Heartbeat(*older), Catch::Contains("missed its heartbeats"));
}

TEST_CASE("an agent registered again keeps its membership when its old connection closes",
          "[tracker][batch]") {
  BatchCluster c;
  const std::string one = PublishFile(c, "team-a", 1);
  RawAgents rpc(c.tracker.rpc_address());
  auto old_session = rpc.Register(c.agent_token, "node-1", 7001);
  auto new_session = rpc.Register(c.agent_token, "node-1", 7001);  // the same agent id
  std::string error;
  REQUIRE(rpc.Batch(*new_session, {{one}}, &error).size() == 1);
  REQUIRE(error.empty());
  old_session = nullptr;  // the old connection closes
  rpc.Turn();
  // The newer registration stands: its heartbeat is taken, its control and
  // swarm entries stay.
  CHECK(rpc.Heartbeat(*new_session).empty());
  CHECK(c.tracker.Metric("shoal_tracker_agents") == 1);
  CHECK(c.tracker.Metric("shoal_tracker_swarm_held_peers") == 1);
}
