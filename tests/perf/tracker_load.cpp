// Tracker load generator: many simulated agents, each on its own TCP
// connection, speaking the agents' Cap'n Proto RPC to one or more trackers.
// Run by tracker_load.sh, which starts the tracker and reports; not a test.
//
//   tracker_load --tracker HOST:PORT[,HOST:PORT...] --token T --model NS/NAME
//                [--tracker-pid PID[,PID...]] [--agents 10000] [--threads 3]
//                [--steady-s 60] [--leechers 0.05] [--need-rate 0.01]
//                [--churn-rate 0.001] [--churn-down-ms 3000] [--torrents N] [--numwant 50]
//                [--ring-follow-s 60] [--orders-use-ring 0] [--load-nice 10]
//
// Agent i talks to tracker i % N. Each agent's life, as shoald lives it:
// connect, registerAgent (name load-i, peer port 20000+i), one announceBatch
// with the version's torrents as seeding (leechers: as downloading, and again
// every intervalMs the tracker answers, wanting peers), a heartbeat every
// heartbeatMs (following the ring's changes while it works: a leecher, and
// with --orders-use-ring 1 an agent for --ring-follow-s after a fetch
// order), and now and then a need for a file's chunks (on a Registry
// from Gateway.authenticate on the same connection). Churn: agents drop
// their connection without goodbye and come back churn-down-ms later.
//
// The load's threads run at --load-nice (10): on a machine it shares with
// the tracker, the tracker and the probe's thread are served first, so the
// probe's latencies are the tracker's and the kernel's, not the load's turns.
//
// Phases: ramp (every agent joins and announces, at most kJoinsInFlight per
// thread at once, under the tracker's unauthenticated-connection limit),
// a settle pause, the steady window (rates, latencies and CPU measured
// here), then one agent stops heartbeating with its connection open and the
// time until the tracker drops it is measured. Prints one JSON object.
#include <arpa/inet.h>
#include <capnp/message.h>
#include <capnp/rpc-twoparty.h>
#include <capnp/serialize.h>
#include <kj/async-io.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/capnp_views.h"
#include "proto/rpc_tls.h"
#include "shoal/file_torrent_info.h"
#include "shoal/manifest_codec.h"
#include "shoal/proto/tracker.capnp.h"

using namespace shoal;

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tracker_load: %s\n", what.c_str());
  std::exit(1);
}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

struct Options {
  std::vector<std::string> trackers;
  std::vector<int> tracker_pids;
  std::vector<std::string> tracker_http;  // their /metrics, for the event loop's lag
  std::string token, ns, name;
  int agents = 10000;
  int threads = 3;
  // Agents on a thread of their own, lightly loaded, whose latencies are
  // reported apart: the tracker's latency without the generator's queues.
  int probe_agents = 50;
  double steady_s = 60;
  double settle_s = 10;
  double leechers = 0.05;     // fraction of agents downloading
  double need_rate = 0.01;    // needs per agent per second
  double churn_rate = 0.001;  // leaves per agent per second
  int churn_down_ms = 3000;
  uint32_t numwant = 50;
  size_t torrents = 0;  // announce only the version's first N torrents; 0: all
  // As shoald: an agent follows the ring's changes while it works (a
  // leecher always; with orders_use_ring, any agent for this long after a
  // fetch order), and an idle one does not. Negative: every agent always
  // follows, as shoald did before.
  double ring_follow_s = 60;
  // Fetch orders use the ring (shoald's --hand-on-owners, or replicas
  // above 1); by default they do not.
  bool orders_use_ring = false;
  // The niceness of the load's threads (not the probe's); 0: as the tracker.
  int load_nice = 10;
};

// What every thread shares: the version, and the run's phase.
struct Shared {
  Options o;
  std::vector<std::string> hashes;               // 20-byte info-hashes
  std::vector<uint64_t> sizes;                   // bytes, by torrent
  std::vector<std::vector<std::string>> chunks;  // by file
  std::string version_id;                        // 32 bytes
  std::atomic<int> phase{0};                     // 0 ramp, 1 steady, 2 after
  std::atomic<int> joined{0};                    // agents registered and announced
  std::atomic<bool> stop{false};
  std::atomic<bool> freeze{false};       // agent 0 stops heartbeating
  std::atomic<double> dropped_ms{-1};    // until announceBatch says it was dropped
  std::atomic<double> ring_gone_ms{-1};  // until ring() no longer lists it
};

enum Type {
  kRegister,
  kHeartbeat,
  kAnnounce,
  kLeechAnnounce,
  kNeed,
  kAuthenticate,
  kFetchOrder,
  kRing,
  kTypes
};
const char* kTypeNames[kTypes] = {"register", "heartbeat",    "announceBatch", "leechAnnounce",
                                  "need",     "authenticate", "fetchOrder",    "ring"};

// The agent ids in ring()'s encoded RingSnapshot, copied to aligned words
// first, as shoald reads it.
std::vector<std::string> SnapshotMembers(capnp::Data::Reader bytes) {
  std::vector<std::string> ids;
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  if (words.size() == 0) return ids;
  std::memcpy(words.begin(), bytes.begin(), words.size() * sizeof(capnp::word));
  capnp::FlatArrayMessageReader message(words);
  for (auto m : message.getRoot<proto::RingSnapshot>().getMembers()) ids.push_back(m.getAgentId());
  return ids;
}

struct Stats {
  std::vector<float> ms[3][kTypes];
  uint64_t errors[3][kTypes] = {};
  uint64_t entries[3] = {};           // swarm entries sent
  uint64_t ring_members[3] = {};      // ring members and departures received
  uint64_t beats_following[3] = {};   // heartbeats that followed the ring
  std::vector<float> loop_lag_ms[3];  // how late this worker's loop ran a timer due
  uint64_t churned = 0, unexpected_drops = 0;
  uint32_t told_ms = 0;  // the longest heartbeat interval the tracker told
  std::string last_error;
  std::map<std::string, uint64_t> error_kinds;  // message (numbers and ids cut), count
  // Steady requests slower than SHOAL_LOAD_SLOW_MS: when each was sent (ms
  // since the process started), its type and its latency.
  struct Slow {
    double sent_ms;
    int type;
    float ms;
  };
  std::vector<Slow> slow;
};

// SHOAL_LOAD_SLOW_MS: list steady requests slower than this on stderr, to
// see whether the tail comes in bursts (0: off).
const double kSlowMs = [] {
  const char* v = std::getenv("SHOAL_LOAD_SLOW_MS");
  return v != nullptr ? std::atof(v) : 0.0;
}();
const auto kProcessStart = std::chrono::steady_clock::now();

struct Agent;

// Answers the tracker's fetch orders (ControlImpl::fetch below).
class ControlImpl final : public proto::AgentControl::Server {
 public:
  ControlImpl(Stats& stats, Shared& shared, Agent& agent)
      : stats_(stats), shared_(shared), agent_(agent) {}

 protected:
  kj::Promise<void> fetch(FetchContext c) override;

 private:
  Stats& stats_;
  Shared& shared_;
  Agent& agent_;
};

struct Agent {
  int index = 0;
  bool leecher = false;
  bool up = false;       // registered and announced
  bool counted = false;  // has joined once (the ramp's count)
  std::string id;
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyVatNetwork> network;
  kj::Own<capnp::RpcSystem<capnp::rpc::twoparty::VatId>> rpc;
  kj::Maybe<proto::Gateway::Client> gateway;
  kj::Maybe<proto::AgentSession::Client> session;
  kj::Maybe<proto::Registry::Client> registry;
  kj::Own<kj::TaskSet> calls;  // needs in flight; cancelled before the connection goes
  kj::Promise<void> life = nullptr;
  uint64_t revocations_seen = 0, revocations_source = 0;
  uint64_t ring_epoch = 0;         // of the ring held, as shoald follows it; 0: none
  bool ring_of_session = false;    // ring_epoch is this session's
  Clock::time_point ring_asked{};  // when work last used the ring (a fetch order)
  // Ends the wait for the next heartbeat early (work needs the ring).
  kj::Own<kj::PromiseFulfiller<void>> wake;
  uint32_t heartbeat_ms = 0;  // the interval the tracker last told; 0: registerAgent's
  uint32_t backoff_ms = 500;  // before registering again, as shoald: doubles to 10 s

  // Whether this agent follows the ring now, as shoald: while it works.
  bool Follows(const Options& o) const {
    return leecher || o.ring_follow_s < 0 ||
           std::chrono::duration<double>(Clock::now() - ring_asked).count() < o.ring_follow_s;
  }

  void Drop() {
    up = false;
    calls = nullptr;
    life = nullptr;
    registry = nullptr;
    session = nullptr;
    gateway = nullptr;
    rpc = nullptr;
    network = nullptr;
    stream = nullptr;
  }
};

// Answers at once, as if the chunk were fetched. A fetch order is work
// that uses the ring: an idle agent starts following it, now.
kj::Promise<void> ControlImpl::fetch(FetchContext c) {
  c.getResults().setFetched(c.getParams().getChunks().size());
  stats_.ms[shared_.phase.load()][kFetchOrder].push_back(0);
  if (!shared_.o.orders_use_ring) return kj::READY_NOW;
  const bool was = agent_.Follows(shared_.o);
  agent_.ring_asked = Clock::now();
  if (!was && agent_.wake.get() != nullptr && agent_.wake->isWaiting()) agent_.wake->fulfill();
  return kj::READY_NOW;
}

// One kj event loop multiplexing its share of the agents.
class Worker {
 public:
  // Plays agents first, first + stride, ... below end.
  Worker(Shared& shared, int id, int first, int end, int stride)
      : shared_(shared), id_(id), first_(first), end_(end), stride_(stride), rng_(id * 7919 + 1) {}

  void Run() {
    auto io = kj::setupAsyncIo();
    io_ = &io;
    const Options& o = shared_.o;
    for (int i = first_; i < end_; i += stride_) {
      auto a = std::make_unique<Agent>();
      a->index = i;
      a->leecher = std::fmod(i * 0.618033988749, 1.0) < o.leechers;
      agents_.push_back(std::move(a));
    }
    tasks_ = kj::heap<kj::TaskSet>(error_log_);
    for (int k = 0; k < kJoinsInFlight; ++k) JoinNext();
    // The generator's own loop lag: a reply that arrives while the loop is
    // late waits as long before it is timed, so this is the part of the
    // latencies that is the generator's, not the tracker's.
    tasks_->add(SampleLag());
    Tick().wait(io.waitScope);
    tasks_ = nullptr;
    pending_join_.clear();
    for (auto& a : agents_) a->Drop();
    io_ = nullptr;
  }

  Stats& stats() { return stats_; }

 private:
  static constexpr int kJoinsInFlight = 32;

  int phase() const { return shared_.phase.load(); }
  kj::Timer& timer() { return io_->provider->getTimer(); }
  kj::Promise<void> After(double ms) {
    return timer().afterDelay(static_cast<int64_t>(ms * 1000) * kj::MICROSECONDS);
  }

  void Record(Type t, Clock::time_point start) {
    const float ms = static_cast<float>(Since(start));
    stats_.ms[phase()][t].push_back(ms);
    if (kSlowMs > 0 && ms > kSlowMs && phase() == 1) {
      const double sent = std::chrono::duration<double, std::milli>(start - kProcessStart).count();
      stats_.slow.push_back({sent, t, ms});
    }
  }
  void Failed(Type t, const kj::Exception& e) {
    stats_.errors[phase()][t]++;
    stats_.last_error = std::string(kTypeNames[t]) + ": " + e.getDescription().cStr();
    std::string kind = stats_.last_error.substr(0, 80);
    auto agent = kind.find("load-");
    if (agent != std::string::npos) kind = kind.substr(0, agent);
    stats_.error_kinds[kind]++;
  }

  // Ramp: starts the next agent that has not joined yet.
  void JoinNext() {
    if (next_join_ >= agents_.size()) return;
    Agent& a = *agents_[next_join_++];
    Start(a, [this] { JoinNext(); });
  }

  // Connects, registers, announces, then lives until dropped.
  void Start(Agent& a, std::function<void()> joined) {
    const auto& trackers = shared_.o.trackers;
    TrackerEndpoint endpoint;
    endpoint.address = trackers[static_cast<size_t>(a.index) % trackers.size()];
    pending_join_[a.index] = std::move(joined);
    a.calls = kj::heap<kj::TaskSet>(error_log_);
    a.life = DialTracker(*io_->provider, endpoint)
                 .then([this, &a](kj::Own<kj::AsyncIoStream> stream) {
                   return Register(a, kj::mv(stream));
                 })
                 .then([this, &a](uint32_t heartbeat_ms) {
                   // As shoald: the whole ring, if the agent follows it.
                   kj::Promise<void> ring =
                       a.Follows(shared_.o) ? FollowRing(a) : kj::Promise<void>(kj::READY_NOW);
                   return ring.then([heartbeat_ms] { return heartbeat_ms; });
                 })
                 .then([this, &a](uint32_t heartbeat_ms) {
                   return Announce(a, false).then([this, &a, heartbeat_ms](uint32_t interval_ms) {
                     return Live(a, heartbeat_ms, interval_ms);
                   });
                 })
                 .then([this, &a]() { LostAgent(a); },
                       [this, &a](kj::Exception&& e) {
                         stats_.last_error = e.getDescription().cStr();
                         LostAgent(a);
                       })
                 .eagerlyEvaluate(nullptr);
  }

  void LostAgent(Agent& a) {
    // The connection ended without our asking: count it and come back
    // after shoald's backoff (TrackerLink::Run).
    if (!a.up) JoinedOrFailed(a);
    stats_.unexpected_drops++;
    a.up = false;
    const uint32_t wait = a.backoff_ms;
    a.backoff_ms = std::min<uint32_t>(a.backoff_ms * 2, 10000);
    tasks_->add(After(wait).then([this, &a] {
      a.Drop();
      if (!shared_.stop) Start(a, [] {});
    }));
  }

  void JoinedOrFailed(Agent& a) {
    auto it = pending_join_.find(a.index);
    if (it == pending_join_.end()) return;
    auto f = std::move(it->second);
    pending_join_.erase(it);
    f();
  }

  kj::Promise<uint32_t> Register(Agent& a, kj::Own<kj::AsyncIoStream> stream) {
    a.stream = kj::mv(stream);
    a.network = kj::heap<capnp::TwoPartyVatNetwork>(*a.stream, capnp::rpc::twoparty::Side::CLIENT);
    a.rpc =
        kj::heap<capnp::RpcSystem<capnp::rpc::twoparty::VatId>>(capnp::makeRpcClient(*a.network));
    capnp::MallocMessageBuilder vat_msg(16);
    auto vat = vat_msg.getRoot<capnp::rpc::twoparty::VatId>();
    vat.setSide(capnp::rpc::twoparty::Side::SERVER);
    auto gateway = a.rpc->bootstrap(vat).castAs<proto::Gateway>();
    a.gateway = gateway;
    auto req = gateway.registerAgentRequest();
    req.setToken(shared_.o.token);
    auto info = req.initInfo();
    info.setName("load-" + std::to_string(a.index));
    info.setPeerPort(static_cast<uint16_t>(20000 + a.index % 40000));
    info.setCacheBytes(uint64_t{100} << 30);
    info.setVersion("tracker-load");
    req.setControl(kj::heap<ControlImpl>(stats_, shared_, a));
    auto start = Clock::now();
    auto disconnected = a.network->onDisconnect().then([]() -> uint32_t {
      kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "disconnected while registering"));
    });
    return req.send()
        .then(
            [this, &a, start](capnp::Response<proto::Gateway::RegisterAgentResults> r) {
              Record(kRegister, start);
              a.session = r.getSession();
              a.backoff_ms = 500;
              a.id = r.getAgentId();
              a.ring_of_session = false;  // a new session: the whole ring, when it follows
              return r.getHeartbeatMs();
            },
            [this](kj::Exception&& e) -> uint32_t {
              Failed(kRegister, e);
              kj::throwFatalException(kj::mv(e));
            })
        .exclusiveJoin(kj::mv(disconnected));
  }

  // One batch of every torrent: seeding, or (leech) downloading and
  // wanting peers. Resolves to the tracker's announce interval.
  kj::Promise<uint32_t> Announce(Agent& a, bool again) {
    KJ_IF_MAYBE (session, a.session) {
      auto req = session->announceBatchRequest();
      const auto& hashes = shared_.hashes;
      auto entries = req.initEntries(static_cast<unsigned>(hashes.size()));
      for (unsigned i = 0; i < hashes.size(); ++i) {
        auto e = entries[i];
        e.setInfoHash(Raw(hashes[i]));
        e.setState(a.leecher ? proto::SwarmEntry::State::DOWNLOADING
                             : proto::SwarmEntry::State::SEEDING);
        e.setLeft(a.leecher ? shared_.sizes[i] : 0);
        e.setPort(static_cast<uint16_t>(20000 + a.index % 40000));
        e.setNumwant(shared_.o.numwant);
        e.setWantPeers(true);
      }
      stats_.entries[phase()] += hashes.size();
      const Type type = again ? kLeechAnnounce : kAnnounce;
      auto start = Clock::now();
      return req.send().then(
          [this, &a, start, type](capnp::Response<proto::AgentSession::AnnounceBatchResults> r) {
            Record(type, start);
            for (auto reply : r.getReplies()) {
              if (reply.getError().size() > 0) {
                stats_.errors[phase()][type]++;
                stats_.last_error = std::string("entry: ") + reply.getError().cStr();
                break;
              }
            }
            if (type == kAnnounce) {
              a.up = true;
              if (!a.counted) shared_.joined++;
              a.counted = true;
              JoinedOrFailed(a);
            }
            return r.getIntervalMs();
          },
          [this, type](kj::Exception&& e) -> uint32_t {
            Failed(type, e);
            kj::throwFatalException(kj::mv(e));
          });
    }
    kj::throwFatalException(KJ_EXCEPTION(FAILED, "no session"));
  }

  // Heartbeats, and a leecher's re-announces, each from a random phase so
  // the fleet's calls spread over the interval.
  kj::Promise<void> Live(Agent& a, uint32_t heartbeat_ms, uint32_t interval_ms) {
    std::uniform_real_distribution<double> phase(0, 1);
    kj::Promise<void> beats = After(heartbeat_ms * phase(rng_)).then([this, &a, heartbeat_ms] {
      return HeartbeatLoop(a, heartbeat_ms);
    });
    kj::Promise<void> dead = a.network->onDisconnect();
    if (!a.leecher) return beats.exclusiveJoin(kj::mv(dead));
    kj::Promise<void> leech = After(interval_ms * phase(rng_)).then([this, &a, interval_ms] {
      return LeechLoop(a, interval_ms);
    });
    return beats.exclusiveJoin(kj::mv(leech)).exclusiveJoin(kj::mv(dead));
  }

  // Waits the interval the tracker told last, as shoald does.
  kj::Promise<void> HeartbeatLoop(Agent& a, uint32_t heartbeat_ms) {
    auto next = [this, &a, heartbeat_ms] {
      const uint32_t ms = a.heartbeat_ms > 0 ? a.heartbeat_ms : heartbeat_ms;
      auto wake = kj::newPromiseAndFulfiller<void>();
      a.wake = kj::mv(wake.fulfiller);
      return After(ms).exclusiveJoin(kj::mv(wake.promise)).then([this, &a, ms] {
        return HeartbeatLoop(a, ms);
      });
    };
    if (a.index == 0 && shared_.freeze) return FrozenProbe(a);
    KJ_IF_MAYBE (session, a.session) {
      auto req = session->heartbeatRequest();
      req.initStats().setTorrents(static_cast<uint32_t>(shared_.hashes.size()));
      req.setRevocationsSeen(a.revocations_seen);
      req.setRevocationsSource(a.revocations_source);
      const bool follow = a.Follows(shared_.o);
      req.setRingSeen(follow && a.ring_of_session ? a.ring_epoch : 0);
      req.setHeartbeatMs(heartbeat_ms);
      if (follow) stats_.beats_following[phase()]++;
      auto start = Clock::now();
      return req.send()
          .then(
              [this, &a, start,
               follow](capnp::Response<proto::AgentSession::HeartbeatResults> r) -> bool {
                Record(kHeartbeat, start);
                if (a.index == 0) last_beat_ = start;
                if (r.getHeartbeatMs() > 0) a.heartbeat_ms = r.getHeartbeatMs();
                stats_.told_ms = std::max(stats_.told_ms, r.getHeartbeatMs());
                a.revocations_seen = r.getRevocations().getGeneration();
                a.revocations_source = r.getRevocations().getSource();
                if (r.getRing().getDelta()) {  // the ring's changes came with the heartbeat
                  stats_.ring_members[shared_.phase.load()] += r.getRing().getChanges().size();
                  a.ring_epoch = r.getEpoch();
                }
                // As shoald: following, a ring the heartbeat could not
                // bring is asked for; idle, none is.
                return follow && (!a.ring_of_session || r.getEpoch() != a.ring_epoch);
              },
              [this](kj::Exception&& e) -> bool {
                Failed(kHeartbeat, e);
                kj::throwFatalException(kj::mv(e));
              })
          .then([this, &a](bool ask) {
            return ask ? FollowRing(a) : kj::Promise<void>(kj::READY_NOW);
          })
          .then(kj::mv(next));
    }
    kj::throwFatalException(KJ_EXCEPTION(FAILED, "no session"));
  }

  // AgentSession.ring since the epoch the agent holds (0: everyone).
  kj::Promise<void> FollowRing(Agent& a) {
    KJ_IF_MAYBE (session, a.session) {
      auto req = session->ringRequest();
      req.setSinceEpoch(a.ring_of_session ? a.ring_epoch : 0);
      auto start = Clock::now();
      return req.send().then(
          [this, &a, start](capnp::Response<proto::AgentSession::RingResults> r) {
            Record(kRing, start);
            // As shoald does: read the snapshot's members, then the changes.
            const size_t members = r.getDelta() ? 0 : SnapshotMembers(r.getSnapshot()).size();
            stats_.ring_members[shared_.phase.load()] += members + r.getChanges().size();
            a.ring_epoch = r.getEpoch();
            a.ring_of_session = true;
          },
          [this](kj::Exception&& e) {
            Failed(kRing, e);
            kj::throwFatalException(kj::mv(e));
          });
    }
    kj::throwFatalException(KJ_EXCEPTION(FAILED, "no session"));
  }

  kj::Promise<void> LeechLoop(Agent& a, uint32_t interval_ms) {
    // The silent agent is silent on every call: a refused announce would
    // register it again, and the ring would list it again.
    if (a.index == 0 && shared_.freeze) return kj::NEVER_DONE;
    return Announce(a, true).then([this, &a](uint32_t next_ms) {
      return After(next_ms).then([this, &a, next_ms] { return LeechLoop(a, next_ms); });
    });
  }

  // Agent 0, silent but connected: probes its session with an empty batch
  // (refused once the tracker counts it as gone) and asks the ring through
  // another agent, every 100 ms, until both say it is gone.
  kj::Promise<void> FrozenProbe(Agent& a) {
    // Timed from agent 0's last heartbeat, when the tracker last heard it.
    if (!frozen_) frozen_at_ = Clock::now();
    frozen_ = true;
    const double t = Since(last_beat_);
    if (Since(frozen_at_) > 60000) return kj::NEVER_DONE;
    kj::Promise<void> probe = kj::READY_NOW;
    KJ_IF_MAYBE (session, a.session) {
      if (shared_.dropped_ms < 0) {
        probe = session->announceBatchRequest().send().then(
            [](auto) {}, [this, t](kj::Exception&&) { shared_.dropped_ms = t; });
      }
    }
    Agent* observer = agents_.size() > 1 ? agents_[1].get() : nullptr;
    if (observer != nullptr && observer->up && shared_.ring_gone_ms < 0) {
      KJ_IF_MAYBE (session, observer->session) {
        probe = probe.then([this, &a, t, s = *session]() mutable {
          return s.ringRequest().send().then(
              [this, &a, t](capnp::Response<proto::AgentSession::RingResults> r) {
                // A whole ring (sinceEpoch 0): the snapshot, then the changes.
                bool listed = false;
                for (const std::string& id : SnapshotMembers(r.getSnapshot()))
                  listed = listed || id == a.id;
                for (auto c : r.getChanges())
                  if (c.getAgentId() == a.id) listed = !c.getLeft();
                if (!listed) shared_.ring_gone_ms = t;
              },
              [](kj::Exception&&) {});
        });
      }
    }
    return probe.then(
        [this, &a] { return After(100).then([this, &a] { return FrozenProbe(a); }); });
  }

  void Need(Agent& a) {
    std::uniform_int_distribution<size_t> pick(0, shared_.chunks.size() - 1);
    const std::vector<std::string>& chunks = shared_.chunks[pick(rng_)];
    kj::Promise<proto::Registry::Client> registry = nullptr;
    KJ_IF_MAYBE (r, a.registry) {
      registry = *r;
    } else {
      KJ_IF_MAYBE (g, a.gateway) {
        auto req = g->authenticateRequest();
        req.setToken(shared_.o.token);
        auto start = Clock::now();
        registry = req.send().then(
            [this, &a, start](capnp::Response<proto::Gateway::AuthenticateResults> r) {
              Record(kAuthenticate, start);
              proto::Registry::Client reg = r.getRegistry();
              a.registry = reg;
              return reg;
            });
      } else {
        return;
      }
    }
    a.calls->add(registry
                     .then([this, &chunks](proto::Registry::Client reg) {
                       auto req = reg.needRequest();
                       req.setNamespace(shared_.o.ns);
                       req.setName(shared_.o.name);
                       req.setVersionId(Raw(shared_.version_id));
                       auto list = req.initChunks(static_cast<unsigned>(chunks.size()));
                       for (unsigned i = 0; i < chunks.size(); ++i) list.set(i, Raw(chunks[i]));
                       auto start = Clock::now();
                       return req.send().ignoreResult().then(
                           [this, start] { Record(kNeed, start); });
                     })
                     .catch_([this](kj::Exception&& e) { Failed(kNeed, e); }));
  }

  // Every 100 ms: this thread's share of needs and churn.
  kj::Promise<void> SampleLag() {
    if (shared_.stop) return kj::READY_NOW;
    const auto due = Clock::now() + std::chrono::milliseconds(10);
    return After(10).then([this, due] {
      stats_.loop_lag_ms[phase()].push_back(static_cast<float>(
          std::max(0.0, -std::chrono::duration<double, std::milli>(due - Clock::now()).count())));
      return SampleLag();
    });
  }

  kj::Promise<void> Tick() {
    if (shared_.stop) return kj::READY_NOW;
    const Options& o = shared_.o;
    const double n = static_cast<double>(agents_.size());
    if (phase() >= 1) {
      need_credit_ += o.need_rate * n * 0.1;
      churn_credit_ += o.churn_rate * n * 0.1;
    }
    std::uniform_int_distribution<size_t> pick(0, agents_.size() - 1);
    for (; need_credit_ >= 1; need_credit_ -= 1) {
      Agent& a = *agents_[pick(rng_)];
      if (a.up) Need(a);
    }
    for (; churn_credit_ >= 1; churn_credit_ -= 1) {
      Agent& a = *agents_[pick(rng_)];
      // Worker 0's first two agents serve the dead-agent probe.
      if (!a.up || a.index < 2 * o.threads) continue;
      stats_.churned++;
      a.Drop();
      tasks_->add(After(o.churn_down_ms).then([this, &a] {
        if (!shared_.stop) Start(a, [] {});
      }));
    }
    return After(100).then([this] { return Tick(); });
  }

  class ErrorLog final : public kj::TaskSet::ErrorHandler {
   public:
    void taskFailed(kj::Exception&&) override {}
  };

  Shared& shared_;
  const int id_;
  const int first_, end_, stride_;
  std::mt19937_64 rng_;
  kj::AsyncIoContext* io_ = nullptr;
  std::vector<std::unique_ptr<Agent>> agents_;
  size_t next_join_ = 0;
  std::map<int, std::function<void()>> pending_join_;
  double need_credit_ = 0, churn_credit_ = 0;
  bool frozen_ = false;
  Clock::time_point frozen_at_;
  Clock::time_point last_beat_ = Clock::now();  // agent 0's last heartbeat sent
  Stats stats_;
  ErrorLog error_log_;
  kj::Own<kj::TaskSet> tasks_;  // lives within Run, on its event loop
};

// utime + stime of `pid` in seconds.
double CpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// VmRSS of `pid` in KiB.
long RssKib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

double SumCpu(const std::vector<int>& pids) {
  double s = 0;
  for (int p : pids) s += CpuSeconds(p);
  return s;
}
long SumRss(const std::vector<int>& pids) {
  long s = 0;
  for (int p : pids) s += RssKib(p);
  return s;
}

// Reads the published version: its torrents' info-hashes and files' chunks.
void LoadVersion(Shared& shared) {
  auto io = kj::setupAsyncIo();
  TrackerEndpoint endpoint;
  endpoint.address = shared.o.trackers[0];
  auto stream = DialTracker(*io.provider, endpoint).wait(io.waitScope);
  capnp::TwoPartyClient client(*stream);
  auto gateway = client.bootstrap().castAs<proto::Gateway>();
  auto auth = gateway.authenticateRequest();
  auth.setToken(shared.o.token);
  auto registry = auth.send().wait(io.waitScope).getRegistry();
  auto req = registry.resolveRequest();
  req.setNamespace(shared.o.ns);
  req.setName(shared.o.name);
  req.setRef("latest");
  auto response = req.send().wait(io.waitScope);
  auto signed_manifest = response.getSigned();
  shared.version_id = Bytes(signed_manifest.getVersionId());
  Result<Manifest> m = DecodeManifest(Bytes(signed_manifest.getManifest()));
  if (!m.ok()) Die(m.status().ToString());
  // With --peer-tls off the cluster's peer CA is empty.
  for (const Digest& d : VersionTorrentHashes(*m, "")) {
    shared.hashes.emplace_back(reinterpret_cast<const char*>(d.data()), 20);
  }
  for (const FileEntry& f : m->files) {
    std::vector<std::string> ids;
    for (const ChunkId& c : f.ChunkIds())
      ids.emplace_back(reinterpret_cast<const char*>(c.data()), 32);
    if (!ids.empty()) shared.chunks.push_back(std::move(ids));
    if (f.size > 0) shared.sizes.push_back(f.size);
  }
  shared.sizes.resize(shared.hashes.size(), m->piece_size);
  if (shared.o.torrents > 0 && shared.o.torrents < shared.hashes.size()) {
    shared.hashes.resize(shared.o.torrents);
    shared.sizes.resize(shared.o.torrents);
  }
  if (shared.chunks.empty()) Die("the version has no chunks");
}

// GET http://ADDRESS/metrics, plainly; "" when it fails.
std::string FetchMetrics(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return "";
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return "";
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: " + address + "\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

// The cumulative bucket counts of one histogram in exposition text, by
// upper bound (+Inf as infinity), summed over several texts.
std::map<double, double> HistogramBuckets(const std::vector<std::string>& texts,
                                          const std::string& name) {
  std::map<double, double> buckets;
  const std::string prefix = name + "_bucket{le=\"";
  for (const std::string& text : texts) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) != 0) continue;
      const size_t end = line.find('"', prefix.size());
      const std::string le = line.substr(prefix.size(), end - prefix.size());
      const double bound = le == "+Inf" ? INFINITY : std::stod(le);
      buckets[bound] += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return buckets;
}

// The upper bound of the bucket holding quantile q of the observations
// between two scrapes (the histogram's resolution, not interpolated).
double BucketQuantile(const std::map<double, double>& before, const std::map<double, double>& after,
                      double q) {
  if (after.empty()) return NAN;
  const double total = after.rbegin()->second - (before.empty() ? 0 : before.rbegin()->second);
  for (const auto& [bound, count] : after) {
    auto b = before.find(bound);
    if (count - (b == before.end() ? 0 : b->second) >= q * total) return bound;
  }
  return INFINITY;
}

double Percentile(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--tracker") {
      o.trackers = Split(v);
    } else if (k == "--tracker-pid") {
      for (const std::string& p : Split(v)) o.tracker_pids.push_back(std::stoi(p));
    } else if (k == "--tracker-http") {
      o.tracker_http = Split(v);
    } else if (k == "--token") {
      o.token = v;
    } else if (k == "--model") {
      auto slash = v.find('/');
      if (slash == std::string::npos) Die("--model is NS/NAME");
      o.ns = v.substr(0, slash);
      o.name = v.substr(slash + 1);
    } else if (k == "--agents") {
      o.agents = std::stoi(v);
    } else if (k == "--probe-agents") {
      o.probe_agents = std::stoi(v);
    } else if (k == "--threads") {
      o.threads = std::stoi(v);
    } else if (k == "--steady-s") {
      o.steady_s = std::stod(v);
    } else if (k == "--settle-s") {
      o.settle_s = std::stod(v);
    } else if (k == "--leechers") {
      o.leechers = std::stod(v);
    } else if (k == "--need-rate") {
      o.need_rate = std::stod(v);
    } else if (k == "--churn-rate") {
      o.churn_rate = std::stod(v);
    } else if (k == "--churn-down-ms") {
      o.churn_down_ms = std::stoi(v);
    } else if (k == "--torrents") {
      o.torrents = std::stoul(v);
    } else if (k == "--ring-follow-s") {
      o.ring_follow_s = std::stod(v);
    } else if (k == "--load-nice") {
      o.load_nice = std::stoi(v);
    } else if (k == "--orders-use-ring") {
      o.orders_use_ring = v == "1" || v == "true";
    } else if (k == "--numwant") {
      o.numwant = static_cast<uint32_t>(std::stoul(v));
    } else {
      Die("unknown flag " + k);
    }
  }
  if (o.trackers.empty() || o.token.empty() || o.name.empty()) {
    Die("usage: tracker_load --tracker HOST:PORT[,...] --token T --model NS/NAME [flags]");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Shared shared;
  shared.o = ParseArgs(argc, argv);
  const Options& o = shared.o;
  struct rlimit lim;
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < static_cast<rlim_t>(o.agents + o.probe_agents) + 64) {
    Die("RLIMIT_NOFILE " + std::to_string(lim.rlim_cur) + " is below one descriptor per agent");
  }
  LoadVersion(shared);
  std::fprintf(stderr, "tracker_load: %zu torrents, %zu files; %d agents on %d threads\n",
               shared.hashes.size(), shared.chunks.size(), o.agents, o.threads);

  const long rss_before = SumRss(o.tracker_pids);
  const auto t_start = Clock::now();
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t)
    workers.push_back(std::make_unique<Worker>(shared, t, t, o.agents, o.threads));
  // The probe's agents, last, on their own thread.
  workers.push_back(
      std::make_unique<Worker>(shared, o.threads, o.agents, o.agents + o.probe_agents, 1));
  for (size_t t = 0; t < workers.size(); ++t) {
    const bool probe = t + 1 == workers.size();
    threads.emplace_back([&w = workers[t], probe, nice = o.load_nice] {
      // The load's threads yield the cores to the tracker and to the
      // probe, as a fleet on other machines would.
      if (!probe && nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
      w->Run();
    });
  }
  while (shared.joined < o.agents + o.probe_agents && Since(t_start) < 900000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double ramp_ms = Since(t_start);
  std::fprintf(stderr, "tracker_load: %d agents joined in %.1f s\n", shared.joined.load(),
               ramp_ms / 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.settle_s * 1000)));
  const long rss_after = SumRss(o.tracker_pids);

  auto scrape = [&o] {
    std::vector<std::string> texts;
    for (const std::string& a : o.tracker_http) texts.push_back(FetchMetrics(a));
    return HistogramBuckets(texts, "shoal_tracker_event_loop_lag_seconds");
  };
  const std::map<double, double> lag_before = scrape();
  shared.phase = 1;
  const auto t0 = Clock::now();
  const double tracker_cpu0 = SumCpu(o.tracker_pids), self_cpu0 = CpuSeconds(getpid());
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.steady_s * 1000)));
  const double tracker_cpu1 = SumCpu(o.tracker_pids), self_cpu1 = CpuSeconds(getpid());
  const double steady_s = Since(t0) / 1000;
  shared.phase = 2;
  const std::map<double, double> lag_after = scrape();
  std::fprintf(stderr, "tracker_load: steady window done; stopping agent 0's heartbeats\n");

  shared.freeze = true;
  const auto t_freeze = Clock::now();
  while ((shared.dropped_ms < 0 || shared.ring_gone_ms < 0) && Since(t_freeze) < 60000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  shared.stop = true;
  for (auto& t : threads) t.join();

  // Merge and print.
  Stats all;
  Stats probe = std::move(workers.back()->stats());
  workers.pop_back();
  for (auto& w : workers) {
    Stats& s = w->stats();
    for (int p = 0; p < 3; ++p) {
      for (int t = 0; t < kTypes; ++t) {
        all.ms[p][t].insert(all.ms[p][t].end(), s.ms[p][t].begin(), s.ms[p][t].end());
        all.errors[p][t] += s.errors[p][t];
      }
      all.entries[p] += s.entries[p];
      all.loop_lag_ms[p].insert(all.loop_lag_ms[p].end(), s.loop_lag_ms[p].begin(),
                                s.loop_lag_ms[p].end());
      all.ring_members[p] += s.ring_members[p];
      all.beats_following[p] += s.beats_following[p];
    }
    all.slow.insert(all.slow.end(), s.slow.begin(), s.slow.end());
    all.churned += s.churned;
    all.told_ms = std::max(all.told_ms, s.told_ms);
    all.unexpected_drops += s.unexpected_drops;
    if (!s.last_error.empty()) all.last_error = s.last_error;
    for (const auto& [k, n] : s.error_kinds) all.error_kinds[k] += n;
  }
  if (kSlowMs > 0) {
    auto slow = all.slow;
    for (auto x : probe.slow) slow.push_back({x.sent_ms, -1 - x.type, x.ms});
    std::sort(slow.begin(), slow.end(),
              [](const Stats::Slow& a, const Stats::Slow& b) { return a.sent_ms < b.sent_ms; });
    for (const auto& x : slow) {
      const int t = x.type < 0 ? -1 - x.type : x.type;
      // `at`: CLOCK_MONOTONIC seconds, as `perf record -k CLOCK_MONOTONIC` stamps samples.
      const double at = std::chrono::duration<double>(kProcessStart.time_since_epoch()).count() +
                        x.sent_ms / 1000;
      std::fprintf(stderr, "slow: sent %.1f ms %s%s %.1f ms at %.3f\n", x.sent_ms,
                   x.type < 0 ? "probe " : "", kTypeNames[t], x.ms, at);
    }
  }
  for (char& ch : all.last_error)
    if (ch == '"' || ch == '\\' || ch == '\n') ch = ' ';
  const double tracker_cpu = tracker_cpu1 - tracker_cpu0, self_cpu = self_cpu1 - self_cpu0;
  uint64_t steady_requests = 0;
  std::printf("{\"agents\": %d, \"threads\": %d, \"trackers\": %zu, \"torrents\": %zu,\n", o.agents,
              o.threads, o.trackers.size(), shared.hashes.size());
  std::printf(" \"ramp_s\": %.2f, \"steady_s\": %.2f,\n", ramp_ms / 1000, steady_s);
  const char* phases[3] = {"ramp", "steady", "after"};
  for (int p = 0; p < 2; ++p) {
    std::printf(" \"%s\": {", phases[p]);
    const double secs = p == 0 ? ramp_ms / 1000 : steady_s;
    for (int t = 0; t < kTypes; ++t) {
      auto& v = all.ms[p][t];
      if (p == 1 && t != kFetchOrder) steady_requests += v.size();
      std::printf(
          "%s\"%s\": {\"count\": %zu, \"per_s\": %.1f, \"errors\": %llu, \"p50_ms\": %.3f, "
          "\"p99_ms\": %.3f, \"max_ms\": %.3f}",
          t ? ", " : "", kTypeNames[t], v.size(), static_cast<double>(v.size()) / secs,
          static_cast<unsigned long long>(all.errors[p][t]), Percentile(v, 0.5),
          Percentile(v, 0.99), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
    }
    // Every request the tracker answered (not the fetch orders it sent).
    std::vector<float> every;
    for (int t = 0; t < kTypes; ++t)
      if (t != kFetchOrder) every.insert(every.end(), all.ms[p][t].begin(), all.ms[p][t].end());
    std::printf(
        ", \"all\": {\"count\": %zu, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f}",
        every.size(), Percentile(every, 0.5), Percentile(every, 0.99), Percentile(every, 0.999));
    const size_t beats = all.ms[p][kHeartbeat].size();
    std::printf(
        ", \"entries_per_s\": %.1f, \"ring_members_per_s\": %.1f, "
        "\"heartbeats_following_share\": %.3f},\n",
        static_cast<double>(all.entries[p]) / secs, static_cast<double>(all.ring_members[p]) / secs,
        beats > 0 ? static_cast<double>(all.beats_following[p]) / static_cast<double>(beats) : 0.0);
  }
  std::printf(" \"steady_requests_per_s\": %.1f,\n",
              static_cast<double>(steady_requests) / steady_s);
  std::printf(" \"tracker_cpu_s\": %.2f, \"tracker_cores\": %.3f, \"requests_per_core_s\": %.0f,\n",
              tracker_cpu, tracker_cpu / steady_s,
              tracker_cpu > 0 ? static_cast<double>(steady_requests) / tracker_cpu : 0.0);
  std::printf(" \"generator_cpu_s\": %.2f, \"generator_cores\": %.3f,\n", self_cpu,
              self_cpu / steady_s);
  std::printf(
      " \"tracker_rss_before_kib\": %ld, \"tracker_rss_after_kib\": %ld, "
      "\"rss_per_agent_kib\": %.1f,\n",
      rss_before, rss_after, static_cast<double>(rss_after - rss_before) / o.agents);
  std::vector<float> probe_all;
  for (int t = 0; t < kTypes; ++t) {
    if (t != kFetchOrder)
      probe_all.insert(probe_all.end(), probe.ms[1][t].begin(), probe.ms[1][t].end());
  }
  std::printf(
      " \"probe\": {\"agents\": %d, \"count\": %zu, \"errors\": %llu, \"p50_ms\": %.3f, "
      "\"p99_ms\": %.3f, \"p999_ms\": %.3f, \"max_ms\": %.3f, \"loop_lag_p99_ms\": %.3f},\n",
      o.probe_agents, probe_all.size(),
      static_cast<unsigned long long>(probe.errors[1][kHeartbeat] + probe.errors[1][kAnnounce]),
      Percentile(probe_all, 0.5), Percentile(probe_all, 0.99), Percentile(probe_all, 0.999),
      probe_all.empty() ? 0.0 : *std::max_element(probe_all.begin(), probe_all.end()),
      Percentile(probe.loop_lag_ms[1], 0.99));
  std::vector<float>& gen_lag = all.loop_lag_ms[1];
  std::printf(" \"generator_loop_lag\": {\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f},\n",
              Percentile(gen_lag, 0.5), Percentile(gen_lag, 0.99), Percentile(gen_lag, 0.999));
  // JSON has no infinity or NaN: -1 for "past the last bucket" or "not read".
  auto ms_or_none = [](double s) { return std::isfinite(s) ? s * 1000 : -1.0; };
  std::printf(
      " \"tracker_loop_lag\": {\"p50_ms_at_most\": %.3f, \"p99_ms_at_most\": %.3f, "
      "\"p999_ms_at_most\": %.3f},\n",
      ms_or_none(BucketQuantile(lag_before, lag_after, 0.5)),
      ms_or_none(BucketQuantile(lag_before, lag_after, 0.99)),
      ms_or_none(BucketQuantile(lag_before, lag_after, 0.999)));
  std::printf(" \"dead_agent_dropped_ms\": %.0f, \"dead_agent_off_ring_ms\": %.0f,\n",
              shared.dropped_ms.load(), shared.ring_gone_ms.load());
  std::printf(" \"heartbeat_told_ms\": %u,\n", all.told_ms);
  std::printf(" \"error_kinds\": {");
  bool first = true;
  for (const auto& [kind, n] : all.error_kinds) {
    std::string k = kind;
    for (char& ch : k)
      if (ch == '"' || ch == '\\' || ch == '\n') ch = ' ';
    std::printf("%s\"%s\": %llu", first ? "" : ", ", k.c_str(), static_cast<unsigned long long>(n));
    first = false;
  }
  std::printf("},\n");
  std::printf(" \"churned\": %llu, \"unexpected_drops\": %llu, \"last_error\": \"%s\"}\n",
              static_cast<unsigned long long>(all.churned),
              static_cast<unsigned long long>(all.unexpected_drops), all.last_error.c_str());
  return 0;
}
