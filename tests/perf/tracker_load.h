// What the files of tracker_load share (tracker_load.cpp says what the
// tool does): its options and the run's shared state, the request types it
// times and the statistics each worker keeps, a simulated agent with the
// control capability it hands the tracker, and the Worker, one kj event
// loop playing a share of the agents. tracker_load_agent.cpp holds the
// agents' calls on the tracker, tracker_load_worker.cpp the worker's loop,
// tracker_load_report.cpp the measurements and the JSON report.
#ifndef SHOAL_TESTS_PERF_TRACKER_LOAD_H_
#define SHOAL_TESTS_PERF_TRACKER_LOAD_H_

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker_load {

using Clock = std::chrono::steady_clock;
inline double Since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
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
inline constexpr const char* kTypeNames[kTypes] = {"register",      "heartbeat", "announceBatch",
                                                   "leechAnnounce", "need",      "authenticate",
                                                   "fetchOrder",    "ring"};

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
extern const double kSlowMs;
extern const Clock::time_point kProcessStart;

// The agent ids in ring()'s encoded RingSnapshot, copied to aligned words
// first, as shoald reads it.
std::vector<std::string> SnapshotMembers(capnp::Data::Reader bytes);

struct Agent;

// Answers the tracker's fetch orders (ControlImpl::fetch, in
// tracker_load_agent.cpp).
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

// One kj event loop multiplexing its share of the agents.
class Worker {
 public:
  // Plays agents first, first + stride, ... below end.
  Worker(Shared& shared, int id, int first, int end, int stride)
      : shared_(shared), id_(id), first_(first), end_(end), stride_(stride), rng_(id * 7919 + 1) {}

  void Run();

  Stats& stats() { return stats_; }

 private:
  static constexpr int kJoinsInFlight = 32;

  int phase() const { return shared_.phase.load(); }
  kj::Timer& timer() { return io_->provider->getTimer(); }
  kj::Promise<void> After(double ms) {
    return timer().afterDelay(static_cast<int64_t>(ms * 1000) * kj::MICROSECONDS);
  }

  void Record(Type t, Clock::time_point start);
  void Failed(Type t, const kj::Exception& e);
  // Ramp: starts the next agent that has not joined yet.
  void JoinNext();
  // Connects, registers, announces, then lives until dropped.
  void Start(Agent& a, std::function<void()> joined);
  void LostAgent(Agent& a);
  void JoinedOrFailed(Agent& a);

  // An agent's calls on the tracker (tracker_load_agent.cpp).
  kj::Promise<uint32_t> Register(Agent& a, kj::Own<kj::AsyncIoStream> stream);
  // One batch of every torrent: seeding, or (leech) downloading and
  // wanting peers. Resolves to the tracker's announce interval.
  kj::Promise<uint32_t> Announce(Agent& a, bool again);
  // Heartbeats, and a leecher's re-announces, each from a random phase so
  // the fleet's calls spread over the interval.
  kj::Promise<void> Live(Agent& a, uint32_t heartbeat_ms, uint32_t interval_ms);
  // Waits the interval the tracker told last, as shoald does.
  kj::Promise<void> HeartbeatLoop(Agent& a, uint32_t heartbeat_ms);
  // AgentSession.ring since the epoch the agent holds (0: everyone).
  kj::Promise<void> FollowRing(Agent& a);
  kj::Promise<void> LeechLoop(Agent& a, uint32_t interval_ms);
  // Agent 0, silent but connected: probes its session with an empty batch
  // (refused once the tracker counts it as gone) and asks the ring through
  // another agent, every 100 ms, until both say it is gone.
  kj::Promise<void> FrozenProbe(Agent& a);
  void Need(Agent& a);

  // Every 10 ms: how late the loop ran a timer due (the generator's loop lag).
  kj::Promise<void> SampleLag();
  // Every 100 ms: this thread's share of needs and churn.
  kj::Promise<void> Tick();

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

// What main measures around the steady window, for the report.
struct Measured {
  double ramp_ms = 0, steady_s = 0;
  double tracker_cpu = 0, self_cpu = 0;  // seconds in the steady window
  long rss_before = 0, rss_after = 0;    // the trackers' KiB, before the ramp and after it
  std::map<double, double> lag_before, lag_after;  // the trackers' loop lag buckets
};

// Measurements (tracker_load_report.cpp).
// utime + stime of `pid` in seconds.
double CpuSeconds(int pid);
double SumCpu(const std::vector<int>& pids);
long SumRss(const std::vector<int>& pids);  // VmRSS, KiB
// GET http://ADDRESS/metrics, plainly; "" when it fails.
std::string FetchMetrics(const std::string& address);
// The cumulative bucket counts of one histogram in exposition text, by
// upper bound (+Inf as infinity), summed over several texts.
std::map<double, double> HistogramBuckets(const std::vector<std::string>& texts,
                                          const std::string& name);

// The workers' statistics, summed.
Stats Merge(std::vector<std::unique_ptr<Worker>>& workers);
// The requests slower than kSlowMs, the probe's marked, on stderr.
void PrintSlow(const Stats& all, const Stats& probe);
// The run as one JSON object on stdout.
void PrintReport(const Shared& shared, Stats& all, Stats& probe, const Measured& m);

}  // namespace shoal::tracker_load

#endif  // SHOAL_TESTS_PERF_TRACKER_LOAD_H_
