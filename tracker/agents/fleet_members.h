// FleetMembers: how many trackers share this tracker's registry right now,
// so each can take its share of the cluster-wide origin budget.
//
// With an etcd registry each tracker holds a lease (kLeaseTtlS) and puts
// `<prefix>fleet/<id>` = its RPC address with it; `id` is random per start,
// so a restarted tracker never collides with its former self. A thread of
// its own refreshes the lease every kRefreshMs and counts the keys under
// `<prefix>fleet/`: a tracker that dies stops refreshing, etcd drops its
// key within the TTL, and the others count one fewer at their next
// refresh. A lease etcd has forgotten (NotFound: this tracker stalled past
// the TTL, or etcd lost it) is granted again and the key put back. While
// etcd cannot be reached the last count stands. Without etcd the fleet is
// this tracker alone.
//
// Thread-safety: size() from any thread; the rest from the owning thread.
#ifndef SHOAL_TRACKER_FLEET_MEMBERS_H_
#define SHOAL_TRACKER_FLEET_MEMBERS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kv/etcd_client.h"
#include "shoal/status.h"

namespace shoal::tracker {

// Each of `trackers` live trackers schedules at most this many origin
// fetches, so that together they stay within `budget`: ceil(budget /
// trackers), at least 1. `trackers` 0 counts as 1.
uint32_t OriginBudgetShare(uint32_t budget, uint32_t trackers);

class FleetMembers {
 public:
  static constexpr int64_t kLeaseTtlS = 5;
  static constexpr int64_t kRefreshMs = 1500;

  // A fleet of one: size() is always 1.
  FleetMembers() = default;
  // Joins the fleet under `key_prefix` (the registry's, ending in "/") as
  // `address`: grants the lease, puts the key and counts the members once
  // before returning, then keeps that up on a thread until destruction.
  // Unavailable (etcd unreachable) or another etcd error if the first
  // round fails; nothing runs then.
  static Result<std::unique_ptr<FleetMembers>> Join(std::unique_ptr<EtcdClient> etcd,
                                                    std::string key_prefix, std::string address);
  ~FleetMembers();  // stops the thread and revokes the lease, so others count one fewer at once
  FleetMembers(const FleetMembers&) = delete;
  FleetMembers& operator=(const FleetMembers&) = delete;

  // Live trackers at the last count, this one included; >= 1.
  uint32_t size() const { return size_.load(); }
  // This tracker's key, e.g. "shoal/fleet/3f2a9c..."; "" for a fleet of one.
  const std::string& key() const { return key_; }

 private:
  FleetMembers(std::unique_ptr<EtcdClient> etcd, std::string key_prefix, std::string address);
  // One round: keep the lease alive (or grant a new one and put the key),
  // then count the members.
  Status Refresh();
  Status Register();
  void Loop();

  // Constant after construction.
  std::unique_ptr<EtcdClient> etcd_;
  std::string fleet_prefix_;  // "<prefix>fleet/"
  std::string key_;           // fleet_prefix_ + this tracker's id
  std::string address_;

  // Touched only by the refreshing thread (and Join before it starts).
  int64_t lease_ = 0;  // 0: none granted yet

  std::atomic<uint32_t> size_{1};

  // Protected by mu_.
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;

  std::thread thread_;  // last: started once the rest is set
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FLEET_MEMBERS_H_
