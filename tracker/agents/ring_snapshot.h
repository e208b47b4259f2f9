// RingSnapshots: the ring's whole membership as one encoded message, which
// every AgentSession.ring() reply for a new session shares.
//
// An agent registering asks for every member. With thousands of members
// and agents re-registering several times a second, building that list
// into each reply would cost milliseconds each on the RPC thread. Instead
// a snapshot (a RingSnapshot message, proto/tracker.capnp) is encoded once
// and copied whole into replies, and the reply adds the changes after the
// snapshot's epoch from the directory's log. The snapshot is encoded again
// once more than max(64, members / 8) changes have happened since it, or
// when the log no longer holds them.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_RING_SNAPSHOT_H_
#define SHOAL_TRACKER_RING_SNAPSHOT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "agents/agent_directory.h"

namespace shoal::tracker {

struct RingSnapshot {
  uint64_t epoch = 0;
  size_t members = 0;
  std::shared_ptr<const std::string> message;  // an encoded proto::RingSnapshot
};

class RingSnapshots {
 public:
  explicit RingSnapshots(AgentDirectory& agents) : agents_(agents) {}

  // A snapshot at most max(64, members / 8) changes behind the directory,
  // or one just encoded when `fresh`.
  RingSnapshot Get(int64_t now_ms, bool fresh = false);

 private:
  AgentDirectory& agents_;
  std::mutex mu_;
  RingSnapshot last_;  // protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RING_SNAPSHOT_H_
