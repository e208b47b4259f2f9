// RpcAdmission: which connections the tracker's RPC port holds, counted in
// all, by IP address, and while they have not authenticated; and which it
// closes to keep a newcomer in when the tokenless pool is full.
//
//   RpcAdmission admission(limits, metrics);
//   auto admitted = admission.Admit("10.0.0.7");   // on the accepting loop
//   if (admitted.is<RpcRefusal>()) { tell the client why; close; }
//   RpcSlot& slot = *admitted.get<kj::Own<RpcSlot>>();
//   ... slot.Evicted() resolves if the slot is closed for a newcomer ...
//   slot.Authenticated();                           // once a token is accepted
//
// The tokenless pool (limits.max_unauthenticated) is shared fairly: one
// address may hold at most limits.max_unauthenticated_per_client of it, and
// once the pool is full a newcomer from an address holding fewer than the
// busiest one takes the place of that address's oldest tokenless
// connection, which is closed (counted as "evicted_unauthenticated"). So a
// few flooding hosts, each under its own limits, cannot keep a well-behaved
// agent or CLI out; they only compete with each other.
//
// Thread-safety: Admit may be called from any loop's thread; a slot is
// created on the caller's loop, and Evicted()'s promise belongs to that
// loop. Authenticated() and the slot's destruction happen on that loop
// too; an eviction may come from any thread.
#ifndef SHOAL_TRACKER_RPC_ADMISSION_H_
#define SHOAL_TRACKER_RPC_ADMISSION_H_

#include <kj/async.h>
#include <kj/one-of.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>

namespace shoal::tracker {

struct TrackerMetrics;

// What a connection may do before and while it authenticates.
struct RpcLimits {
  int64_t auth_timeout_ms = 10000;     // to present a token
  int64_t message_timeout_ms = 30000;  // for a message to arrive whole after its first byte
  uint32_t max_unauthenticated = 256;  // connections without a token at once
  uint32_t max_connections = 4096;     // connections at once, authenticated or not
  uint32_t max_per_client = 128;       // ... from one IP address
  uint32_t max_unauthenticated_per_client = 32;  // connections without a token from one address
};

// Why a connection was not admitted: `reason` is the metric's label,
// `message` one line for the client, naming the limit and its flag.
struct RpcRefusal {
  const char* reason;
  std::string message;
};

class RpcAdmission;

// One connection's place in the counts, from accept (TLS handshake
// included) until it is destroyed.
class RpcSlot {
 public:
  ~RpcSlot();
  RpcSlot(const RpcSlot&) = delete;
  RpcSlot& operator=(const RpcSlot&) = delete;

  // The connection presented an accepted token: it leaves the tokenless
  // pool and can no longer be evicted.
  void Authenticated();
  // Resolves if the slot was evicted to make room for a newcomer; never
  // otherwise. May be called more than once (each call is a branch).
  kj::Promise<void> Evicted();

 private:
  friend class RpcAdmission;
  enum class State { kWaiting, kAuthenticated, kEvicted };
  RpcSlot(RpcAdmission& admission, std::string peer,
          kj::PromiseCrossThreadFulfillerPair<void> evict);

  RpcAdmission& admission_;
  const std::string peer_;
  // Fulfilled on eviction, from any thread, under admission.mu_.
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> evict_;
  kj::ForkedPromise<void> evicted_;
  // Protected by admission.mu_.
  State state_ = State::kWaiting;
  std::list<RpcSlot*>::iterator waiting_at_;  // in admission.waiting_[peer_] while kWaiting
};

class RpcAdmission {
 public:
  // `metrics` must outlive this; its RPC gauges and refusal counters are kept here.
  RpcAdmission(const RpcLimits& limits, TrackerMetrics& metrics)
      : limits_(limits), metrics_(metrics) {}
  RpcAdmission(const RpcAdmission&) = delete;
  RpcAdmission& operator=(const RpcAdmission&) = delete;

  // Counts a new connection from `peer` in, evicting another address's
  // oldest tokenless connection if that is what makes room, or says why it
  // must be refused.
  kj::OneOf<kj::Own<RpcSlot>, RpcRefusal> Admit(const std::string& peer);

  const RpcLimits& limits() const { return limits_; }

 private:
  friend class RpcSlot;
  // The tokenless pool is full: evicts the oldest tokenless connection of
  // the busiest address if it holds more than one more than the
  // newcomer's address, which holds `mine_waiting`.
  bool EvictForLocked(size_t mine_waiting);
  void LeaveWaitingLocked(RpcSlot& slot);  // REQUIRES: slot.state_ == kWaiting
  void Release(RpcSlot& slot);

  // Constant after construction.
  const RpcLimits limits_;
  TrackerMetrics& metrics_;

  std::mutex mu_;  // makes each admission's check and count one step
  // Protected by mu_.
  std::map<std::string, uint32_t> per_client_;          // open connections by IP
  std::map<std::string, std::list<RpcSlot*>> waiting_;  // tokenless ones by IP, oldest first
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RPC_ADMISSION_H_
