#include "common/change_signal.h"

#include <algorithm>
#include <utility>

namespace shoal::tracker {

uint64_t ChangeSignal::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

void ChangeSignal::Bump() {
  std::vector<kj::Own<kj::CrossThreadPromiseFulfiller<void>>> woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    woken.swap(waiters_);
  }
  for (auto& w : woken) w->fulfill();  // a waiter that gave up ignores it
}

kj::Promise<void> ChangeSignal::After(uint64_t seen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation_ > seen) return kj::READY_NOW;
  // Waiters that timed out are dropped here, so the list stays as long as
  // the calls still waiting.
  waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                [](const auto& w) { return !w->isWaiting(); }),
                 waiters_.end());
  auto pair = kj::newPromiseAndCrossThreadFulfiller<void>();
  waiters_.push_back(kj::mv(pair.fulfiller));
  return kj::mv(pair.promise);
}

}  // namespace shoal::tracker
