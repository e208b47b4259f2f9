// SwarmReports: what the tracker knows of this agent's swarms, so that the
// announce relay sends it only changes.
//
// libtorrent announces every torrent on its own interval to the agent's
// loopback relay (tracker_link.h). Most of those announces change nothing
// the tracker needs: the tracker holds an entry put in a swarm over the
// agent's session for as long as the session lives. So per torrent this
// keeps the state last reported (downloading, seeding) and the tracker's
// last reply, and:
//   - answers an announce that changes nothing (a seeder still seeding) at
//     once from that reply, with no call to the tracker;
//   - queues a change (started, completed, stopped, and every announce of
//     a leecher, which needs fresh peers) for the next batch
//     (AgentSession.announceBatch), whose reply answers the announce;
//   - answers a stop at once: libtorrent needs no peers for it.
// Resend() queues every torrent again, for a new session (the tracker's
// swarms start empty after a restart).
//
// Thread-safety: safe for concurrent use. The `done` callbacks run on the
// thread that calls Announce (answered at once), Settle, Fail or DropQueued,
// never under the lock.
#ifndef SHOAL_AGENT_DAEMON_SWARM_REPORTS_H_
#define SHOAL_AGENT_DAEMON_SWARM_REPORTS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

// One announce libtorrent made to the relay.
struct RelayedAnnounce {
  std::string info_hash;  // 20 bytes
  enum class Event { kNone, kStarted, kCompleted, kStopped } event = Event::kNone;
  uint64_t left = 1;  // bytes still wanted; 0 for a seeder
  uint16_t port = 0;
  uint32_t numwant = 50;
};

// Reads a relayed announce from its decoded query parameters.
// InvalidArgument naming the parameter when one is missing or malformed.
Result<RelayedAnnounce> ParseRelayedAnnounce(const std::map<std::string, std::string>& query);

enum class SwarmState { kNone, kDownloading, kSeeding, kStopped };

// The bencoded announce reply (or why there is none) for libtorrent.
using AnnounceDone = std::function<void(Result<std::string>)>;

// One torrent's entry in a batch, and the announces waiting for its reply.
struct SwarmChange {
  std::string info_hash;
  SwarmState state = SwarmState::kNone;
  uint64_t left = 0;
  uint16_t port = 0;
  uint32_t numwant = 0;
  bool want_peers = false;  // true when an announce waits for the reply
  std::vector<AnnounceDone> waiters;
};

// The tracker's reply to one SwarmChange.
struct SwarmAnswer {
  std::string error;           // empty: recorded
  std::string peers4, peers6;  // compact, as in a bencoded announce reply
  uint32_t complete = 0, incomplete = 0;
};

class SwarmReports {
 public:
  SwarmReports() = default;
  SwarmReports(const SwarmReports&) = delete;
  SwarmReports& operator=(const SwarmReports&) = delete;

  // Answers `done` at once, or queues a change whose batch will. Returns
  // true if it queued one (the sender should wake).
  bool Announce(const RelayedAnnounce& a, AnnounceDone done);
  // Up to `max` queued changes, oldest first, for one batch.
  std::vector<SwarmChange> Take(size_t max);
  // The tracker's `answers` to the batch `sent` (one each, in order), and
  // the intervals it tells leechers and seeders. Answers the waiters.
  void Settle(std::vector<SwarmChange> sent, const std::vector<SwarmAnswer>& answers,
              int64_t interval_ms, int64_t seed_interval_ms);
  // The batch `sent` failed as a whole: its waiters hear `why`, and the
  // tracker's view of those torrents counts as unknown (sent again on the
  // next announce).
  void Fail(std::vector<SwarmChange> sent, const Status& why);
  // The tracker holds nothing of this agent (a new session): queues every
  // torrent's current state. Returns true if it queued any.
  bool Resend();
  // Unqueues every change; their waiters hear `why` (no session, or the
  // agent is stopping). Resend() queues them again.
  void DropQueued(const Status& why);
  bool HasQueued();

  uint64_t answered_locally() const { return answered_locally_; }
  uint64_t changes_sent() const { return changes_sent_; }

 private:
  struct Torrent {
    SwarmState reported = SwarmState::kNone;  // what the tracker holds
    SwarmChange latest;                       // from the last announce; no waiters
    bool queued = false;
    std::vector<AnnounceDone> waiters;
    SwarmAnswer last;  // the tracker's last reply with peers
  };
  // Queues `t` unless it is queued already. REQUIRES: mu_ held
  void Enqueue(const std::string& info_hash, Torrent& t);
  // libtorrent's reply from `answer`. REQUIRES: mu_ held
  std::string Body(const SwarmAnswer& answer, bool seeding) const;

  std::mutex mu_;
  std::map<std::string, Torrent> torrents_;  // by info-hash; protected by mu_
  std::deque<std::string> queue_;            // info-hashes with queued set; protected by mu_
  int64_t interval_ms_ = 5000;               // the tracker's, from the last batch; protected
  int64_t seed_interval_ms_ = 60000;         // ... for seeders; protected by mu_
  std::atomic<uint64_t> answered_locally_{0};
  std::atomic<uint64_t> changes_sent_{0};
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_SWARM_REPORTS_H_
