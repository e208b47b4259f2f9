#include "rpc/rpc_admission.h"

#include <utility>

#include "common/tracker_metrics.h"

namespace shoal::tracker {

RpcSlot::RpcSlot(RpcAdmission& admission, std::string peer,
                 kj::PromiseCrossThreadFulfillerPair<void> evict)
    : admission_(admission),
      peer_(std::move(peer)),
      evict_(kj::mv(evict.fulfiller)),
      evicted_(evict.promise.fork()) {}

RpcSlot::~RpcSlot() { admission_.Release(*this); }

void RpcSlot::Authenticated() {
  std::lock_guard<std::mutex> l(admission_.mu_);
  if (state_ != State::kWaiting) return;
  admission_.LeaveWaitingLocked(*this);
  state_ = State::kAuthenticated;
}

kj::Promise<void> RpcSlot::Evicted() {
  // The fulfiller goes with the slot; a branch still held then would be
  // rejected, which means only that no eviction will come.
  return evicted_.addBranch().then(
      []() -> kj::Promise<void> { return kj::READY_NOW; },
      [](kj::Exception&&) -> kj::Promise<void> { return kj::NEVER_DONE; });
}

kj::OneOf<kj::Own<RpcSlot>, RpcRefusal> RpcAdmission::Admit(const std::string& peer) {
  kj::OneOf<kj::Own<RpcSlot>, RpcRefusal> out;
  auto refuse = [&](std::atomic<uint64_t>& counter, const char* reason, std::string why) {
    counter++;
    out.init<RpcRefusal>(RpcRefusal{reason, "the tracker refused this connection: " + why});
  };
  std::lock_guard<std::mutex> l(mu_);
  TrackerMetrics& m = metrics_;
  const std::string from = " from " + peer;
  if (m.rpc_connections >= limits_.max_connections) {
    refuse(m.rpc_refused_connections, "too_many_connections",
           std::to_string(limits_.max_connections) +
               " connections are open, its limit (--rpc-max-connections); try again later");
    return out;
  }
  auto mine = per_client_.find(peer);
  if (mine != per_client_.end() && mine->second >= limits_.max_per_client) {
    refuse(m.rpc_refused_per_client, "too_many_from_client",
           std::to_string(mine->second) + " connections are open" + from +
               ", its limit per address (--rpc-max-connections-per-client)");
    return out;
  }
  auto waiting = waiting_.find(peer);
  const size_t mine_waiting = waiting == waiting_.end() ? 0 : waiting->second.size();
  if (mine_waiting >= limits_.max_unauthenticated_per_client) {
    refuse(m.rpc_refused_unauthenticated_per_client, "too_many_unauthenticated_from_client",
           std::to_string(mine_waiting) + " connections" + from +
               " have not authenticated yet, its limit per address "
               "(--rpc-max-unauthenticated-per-client); try again once they have");
    return out;
  }
  if (m.rpc_unauthenticated >= limits_.max_unauthenticated && !EvictForLocked(mine_waiting)) {
    refuse(m.rpc_refused_unauthenticated, "too_many_unauthenticated",
           std::to_string(limits_.max_unauthenticated) +
               " connections have not authenticated yet, its limit "
               "(--rpc-max-unauthenticated), and none is from an address busier than " +
               peer + "; try again later");
    return out;
  }
  kj::Own<RpcSlot> slot(new RpcSlot(*this, peer, kj::newPromiseAndCrossThreadFulfiller<void>()),
                        kj::_::HeapDisposer<RpcSlot>::instance);
  std::list<RpcSlot*>& list = waiting_[peer];
  slot->waiting_at_ = list.insert(list.end(), slot.get());
  per_client_[peer]++;
  m.rpc_unauthenticated++;
  m.rpc_connections++;
  out.init<kj::Own<RpcSlot>>(kj::mv(slot));
  return out;
}

bool RpcAdmission::EvictForLocked(size_t mine_waiting) {
  auto busiest = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (busiest == waiting_.end() || it->second.size() > busiest->second.size()) busiest = it;
  }
  if (busiest == waiting_.end()) return false;
  // Taking one from an address that would then hold no fewer than the
  // newcomer's: a swap among equals would only churn.
  if (busiest->second.size() <= mine_waiting + 1) return false;
  RpcSlot* victim = busiest->second.front();
  LeaveWaitingLocked(*victim);
  victim->state_ = RpcSlot::State::kEvicted;
  victim->evict_->fulfill();
  metrics_.rpc_evicted_unauthenticated++;
  return true;
}

void RpcAdmission::LeaveWaitingLocked(RpcSlot& slot) {
  auto it = waiting_.find(slot.peer_);
  it->second.erase(slot.waiting_at_);
  if (it->second.empty()) waiting_.erase(it);
  metrics_.rpc_unauthenticated--;
}

void RpcAdmission::Release(RpcSlot& slot) {
  std::lock_guard<std::mutex> l(mu_);
  if (slot.state_ == RpcSlot::State::kWaiting) LeaveWaitingLocked(slot);
  metrics_.rpc_connections--;
  auto it = per_client_.find(slot.peer_);
  if (--it->second == 0) per_client_.erase(it);
}

}  // namespace shoal::tracker
