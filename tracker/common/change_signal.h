// ChangeSignal: wakes the RPC calls that wait for the registry to change
// (Registry.watch), whichever event loop they wait on.
//
// Writers Bump() after each change the registry stores; a waiter reads
// generation() before it looks at the registry, and waits on After() with
// that number, so a change made between its look and its wait still wakes
// it.
//
// Thread-safety: every method may be called from any thread; After() from
// a thread with a kj event loop, whose promise resolves on that loop.
#ifndef SHOAL_TRACKER_COMMON_CHANGE_SIGNAL_H_
#define SHOAL_TRACKER_COMMON_CHANGE_SIGNAL_H_

#include <kj/async.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace shoal::tracker {

class ChangeSignal {
 public:
  uint64_t generation() const;
  // Counts a change and wakes every waiter.
  void Bump();
  // Resolves once generation() > seen: at once if it is already.
  kj::Promise<void> After(uint64_t seen);

 private:
  mutable std::mutex mu_;
  uint64_t generation_ = 0;
  std::vector<kj::Own<kj::CrossThreadPromiseFulfiller<void>>> waiters_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_COMMON_CHANGE_SIGNAL_H_
