#include "agents/fleet_members.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "shoal/log.h"

namespace shoal::tracker {
namespace {

// 16 hex digits, fresh at every start.
std::string NewMemberId() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uint32_t OriginBudgetShare(uint32_t budget, uint32_t trackers) {
  if (trackers == 0) trackers = 1;
  const uint32_t share = (budget + trackers - 1) / trackers;
  return share < 1 ? 1 : share;
}

FleetMembers::FleetMembers(std::unique_ptr<EtcdClient> etcd, std::string key_prefix,
                           std::string address)
    : etcd_(std::move(etcd)),
      fleet_prefix_(std::move(key_prefix) + "fleet/"),
      key_(fleet_prefix_ + NewMemberId()),
      address_(std::move(address)) {}

Result<std::unique_ptr<FleetMembers>> FleetMembers::Join(std::unique_ptr<EtcdClient> etcd,
                                                         std::string key_prefix,
                                                         std::string address) {
  std::unique_ptr<FleetMembers> f(
      new FleetMembers(std::move(etcd), std::move(key_prefix), std::move(address)));
  SHOAL_RETURN_IF_ERROR(f->Refresh().WithContext("join the tracker fleet"));
  f->thread_ = std::thread([m = f.get()] { m->Loop(); });
  return f;
}

FleetMembers::~FleetMembers() {
  if (!thread_.joinable()) return;  // a fleet of one, or Join failed
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Best effort: the TTL ends it anyway.
  if (lease_ != 0) (void)etcd_->Revoke(lease_);
}

Status FleetMembers::Register() {
  Result<int64_t> lease = etcd_->GrantLease(kLeaseTtlS);
  if (!lease.ok()) return lease.status().WithContext("grant the fleet lease");
  // Kept only once the key is in place, so a failed put is retried whole.
  Result<int64_t> put = etcd_->Put(key_, address_, *lease);
  if (!put.ok()) return put.status().WithContext("put " + key_);
  lease_ = *lease;
  return Status::OK();
}

Status FleetMembers::Refresh() {
  if (lease_ == 0) {
    SHOAL_RETURN_IF_ERROR(Register());
  } else {
    Result<int64_t> ttl = etcd_->KeepAlive(lease_);
    if (!ttl.ok() && ttl.status().IsNotFound()) {
      Log(LogLevel::kWarn, "fleet.lease_lost", {{"key", key_}});
      lease_ = 0;
      SHOAL_RETURN_IF_ERROR(Register());
    } else if (!ttl.ok()) {
      return ttl.status().WithContext("keep the fleet lease alive");
    }
  }
  RangeRequest count = RangeRequest::Prefix(fleet_prefix_);
  count.count_only = true;
  Result<RangeResult> members = etcd_->Range(count);
  if (!members.ok()) return members.status().WithContext("count the fleet");
  // Our own key may be missing for a moment (a lease lost between the two
  // calls); we are alive all the same.
  const uint32_t n = members->count < 1 ? 1 : static_cast<uint32_t>(members->count);
  const uint32_t before = size_.exchange(n);
  if (before != n) {
    Log(LogLevel::kInfo, "fleet.size", {{"trackers", static_cast<int64_t>(n)}, {"key", key_}});
  }
  return Status::OK();
}

void FleetMembers::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (
      !wake_.wait_for(lock, std::chrono::milliseconds(kRefreshMs), [this] { return stopping_; })) {
    lock.unlock();
    Status s = Refresh();
    if (!s.ok()) Log(LogLevel::kWarn, "fleet.refresh_failed", {{"error", s.message()}});
    lock.lock();
  }
}

}  // namespace shoal::tracker
