// AgentDirectory: the live agents, from registrations and heartbeats.
//
// Soft state: rebuilt as agents re-register after a tracker restart. An
// agent that misses three heartbeats is dropped. Every join or leave bumps
// the epoch, which the ring of chunk owners is versioned by.
//
// Pacing: with a heartbeat budget, the interval each member is told
// grows with the membership, so the tracker takes about that many
// heartbeats a second however large the fleet: heartbeat_ms() for small
// fleets, members / budget seconds beyond. A member is dropped after three
// of the intervals it was last told, so a silent agent is noticed later in
// a large fleet (a killed one is still removed at once: its connection
// closes).
//
// Cost: with thousands of agents the ring changes many times a minute and
// every agent at work follows it, so following it must not cost the
// fleet's size: RingChanges(since) gives the changes after an epoch the
// caller holds (from a log of the last kRingLogSize changes), and the full
// member list is built once per epoch and shared. An agent is sent only
// the net changes (Detail::kNet): each member's last one, and none for a
// member that left and came back as it was (an agent restarting), so what
// it is sent grows with what changed since it last looked, not with how
// often it changed. Silent members are looked for at most every
// kExpireEveryMs (Contains never counts one, whenever it is dropped).
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_AGENT_DIRECTORY_H_
#define SHOAL_TRACKER_AGENT_DIRECTORY_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "shoal/agent_stats.h"
#include "shoal/hash_ring.h"

namespace shoal::tracker {

struct AgentRecord {
  std::string id;  // name + "@" + address:port, or address:first-last for several sessions
  std::string name;
  std::string address;  // peer address as the tracker saw the connection
  uint16_t peer_port = 0;
  uint16_t peer_sessions = 1;  // on peer_port and the ports after it
  std::string zone;
  uint64_t cache_bytes = 0;
  std::string version;
  std::vector<std::string> labels;  // "key=value"
  uint64_t session = 0;  // which registration: a newer one replaces an older one's record
  // How many times less often than a home member it heartbeats here (an
  // agent whose home is another tracker of the fleet: more than 1).
  int heartbeat_factor = 1;
  int64_t heartbeat_ms = 0;  // the interval it was last told; 0 at Join: the directory's
  int64_t joined_ms = 0;
  int64_t last_heartbeat_ms = 0;
  int64_t origin_read_ms = 0;  // last heartbeat at which stats.origin_bytes_read grew; 0: none
  AgentStats stats;            // as of the last heartbeat
};

// Receives the ring's changes after an epoch (AgentDirectory::RingChanges).
class RingChangeSink {
 public:
  virtual ~RingChangeSink() = default;
  // Called once, first: the epoch the changes lead to, and how many follow.
  virtual void Begin(uint64_t epoch, size_t changes) = 0;
  // One change, oldest first.
  virtual void Change(const std::string& id, uint64_t weight, bool left) = 0;
};

// The changes as a list, for a HashRing to Apply.
struct RingChangeList final : RingChangeSink {
  uint64_t epoch = 0;  // the epoch the changes lead to
  std::vector<RingChange> changes;
  void Begin(uint64_t e, size_t n) override {
    epoch = e;
    changes.reserve(n);
  }
  void Change(const std::string& id, uint64_t weight, bool left) override {
    changes.push_back({id, weight, left});
  }
};

class AgentDirectory {
 public:
  // `heartbeat_ms`: the shortest interval members are told. With
  // `heartbeats_per_s` above 0, longer intervals keep the members'
  // heartbeats near that rate.
  explicit AgentDirectory(int64_t heartbeat_ms, double heartbeats_per_s = 0)
      : heartbeat_ms_(heartbeat_ms), heartbeats_per_s_(heartbeats_per_s) {}

  int64_t heartbeat_ms() const { return heartbeat_ms_; }
  // The interval a home member is told now (heartbeat_ms() unless paced).
  int64_t IntervalMs();

  // Adds or replaces the agent with this id; returns the new epoch. A
  // record without its own heartbeat_ms is told the interval for its
  // heartbeat_factor, which `told_ms`, if not null, gets.
  uint64_t Join(AgentRecord record, int64_t now_ms, int64_t* told_ms = nullptr);
  // Refreshes a member; false if it had already been dropped (it must join
  // again). `waited_ms` is the interval the member says it keeps, 0 for an
  // agent that keeps the one it was told at Join. `next_ms`, if not null,
  // gets the interval to tell it now; a member that keeps its own is held
  // to that one.
  bool Heartbeat(const std::string& id, const AgentStats& stats, int64_t now_ms,
                 int64_t waited_ms = 0, int64_t* next_ms = nullptr);
  // Removes a member (its connection closed), unless it has registered
  // again since on another session. Returns the epoch.
  uint64_t Leave(const std::string& id, uint64_t session);
  // True if `id` is a member that has not missed three of its heartbeats.
  bool Contains(const std::string& id, int64_t now_ms);
  // True if `id`'s origin_bytes_read grew at a heartbeat within two of its
  // intervals: it is reading the origin now (an older agent never says so).
  bool ReadingOrigin(const std::string& id, int64_t now_ms);
  // Drops members silent for three of their heartbeats.
  void Expire(int64_t now_ms);

  // Every member, by id.
  std::vector<AgentRecord> Members(int64_t now_ms);
  // How many members there are, and how many of them heartbeat less often
  // than home members (away: another tracker is their home), without
  // copying them.
  struct Counts {
    size_t members = 0;
    size_t away = 0;
  };
  Counts Count(int64_t now_ms);
  // Every member at the current epoch (weights are cache bytes), built once
  // per epoch and shared; `epoch` gets that epoch.
  std::shared_ptr<const std::vector<RingMember>> RingMembers(int64_t now_ms, uint64_t* epoch);
  // Which changes RingChanges hands over.
  enum class Detail {
    kEvery,  // each change, in order
    // The net changes, in order: a member's last change only, and none for
    // a member that left and joined again with its weight. A ring applying
    // them (HashRing::Apply: each member's last change decides) ends the
    // same.
    kNet,
  };
  // Hands `sink` the changes after `since_epoch`, under this directory's
  // lock (the sink must not call back in). False, with nothing handed,
  // when they cannot be: since_epoch is 0 or not a past epoch, the log no
  // longer holds every change since, or the changes are at least as many
  // as the members (every member is then cheaper).
  bool RingChanges(uint64_t since_epoch, int64_t now_ms, RingChangeSink& sink,
                   Detail detail = Detail::kEvery);
  uint64_t epoch();

  static constexpr size_t kRingLogSize = 16384;
  static constexpr int64_t kExpireEveryMs = 1000;

 private:
  struct Change {
    uint64_t epoch;  // the epoch it made
    std::string id;
    uint64_t weight;  // its weight: as it joined, or as it was when it left
    bool left;
    uint64_t prev = 0;  // the epoch of this member's change before, 0: none logged
    uint64_t next = 0;  // ... and after; 0: none yet
  };
  // Bumps the epoch for a change of `id`. REQUIRES: mu_ held
  void Changed(const std::string& id, uint64_t weight, bool left);
  // The logged change that made `epoch`. REQUIRES: mu_ held, and the log holds it
  Change& Logged(uint64_t epoch) { return log_[epoch - log_.front().epoch]; }
  // Whether RingChanges(since, kNet) hands `c` over. REQUIRES: mu_ held
  bool NetChange(const Change& c, uint64_t since);
  void ExpireLocked(int64_t now_ms);  // REQUIRES: mu_ held
  // The interval for a member of `factor`. REQUIRES: mu_ held
  int64_t IntervalLocked(int factor) const;
  // Counts `r` in (or, with sign -1, out of) the heartbeats per interval. REQUIRES: mu_ held
  void CountBeats(const AgentRecord& r, int sign);

  const int64_t heartbeat_ms_;
  const double heartbeats_per_s_;
  // Heartbeats the members send per home interval, in 1/kBeatUnits (a
  // member of factor f counts kBeatUnits / f); protected by mu_
  static constexpr int64_t kBeatUnits = 60;
  int64_t beat_units_ = 0;
  std::mutex mu_;
  std::unordered_map<std::string, AgentRecord> members_;  // protected by mu_
  uint64_t epoch_ = 0;                                    // protected by mu_
  std::deque<Change> log_;  // the last changes, oldest first; protected by mu_
  // Each member's last change in log_, by epoch; protected by mu_
  std::unordered_map<std::string, uint64_t> last_change_;
  int64_t last_expire_ms_ = 0;  // protected by mu_
  // Every member at ring_epoch_; protected by mu_
  std::shared_ptr<const std::vector<RingMember>> ring_;
  uint64_t ring_epoch_ = 0;  // protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_AGENT_DIRECTORY_H_
