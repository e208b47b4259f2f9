// ConnectionLimits: how many connections a server holds in all and from
// each client, the slots that count them, and which idle connection makes
// room for a newcomer when the server is full. Private to shoal_server.
//
//   ConnectionLimits limits(4096, 256, &gauge);
//   ConnectionSlot slot = limits.TryAdmit("10.0.0.7", &why);
//   if (!slot) { refuse; }   // the slot is released when it is destroyed
//   slot.SetEvictor([weak] { post a close to the connection's strand; });
//   slot.MarkIdle();               // waiting for a request's first byte
//   ... the byte comes:
//   if (!slot.MarkBusy()) close;   // evicted before it came
//
// A full server (max_total open) still admits a newcomer if a client
// holding more connections than the newcomer's address has an idle one:
// the oldest idle connection of the busiest such client is evicted, its
// evictor called once, and the newcomer admitted at once. Otherwise the
// newcomer is refused. An evicted connection keeps counting until it
// closes, so for that moment the count exceeds max_total by the evictions
// under way; each is sure to close, since its connection can no longer
// turn busy (MarkBusy returns false). Exempt clients ("") are never
// evicted and never count as holding more.
//
// Thread-safety: TryAdmit, SetEvictor and slot destruction may run on any
// thread. One slot's MarkIdle and MarkBusy must not run concurrently with
// each other (call them from its connection's strand).
#ifndef SHOAL_SERVER_CONNECTION_LIMITS_H_
#define SHOAL_SERVER_CONNECTION_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "shoal/server/metrics.h"

namespace shoal {

class ConnectionLimits;
struct SlotRecord;  // one admitted connection's entry; connection_limits.cpp

// One admitted connection; movable, and released on destruction. Empty if
// the connection was refused. REQUIRES for every method but the bool: not
// empty.
class ConnectionSlot {
 public:
  ConnectionSlot() = default;
  ConnectionSlot(ConnectionSlot&& other) noexcept;
  ConnectionSlot& operator=(ConnectionSlot&& other) noexcept;
  ~ConnectionSlot();

  explicit operator bool() const { return limits_ != nullptr; }

  // How the limits close this connection to make room while it is idle.
  // `evict` is called at most once, on the thread admitting a newcomer,
  // possibly after the connection is gone: it must only hand the close to
  // the connection's own strand, holding the connection weakly.
  // REQUIRES: called before the first MarkIdle.
  void SetEvictor(std::function<void()> evict);
  // The connection waits for a request's first byte (with TLS: or for its
  // handshake), nothing being read or answered: it may be evicted from now.
  // No effect once evicted.
  void MarkIdle();
  // The wait is over. False if the connection was evicted first: close it.
  bool MarkBusy();

 private:
  friend class ConnectionLimits;
  ConnectionSlot(std::shared_ptr<ConnectionLimits> limits, std::shared_ptr<SlotRecord> record);
  void Release();

  std::shared_ptr<ConnectionLimits> limits_;
  std::shared_ptr<SlotRecord> record_;
};

enum class Admission {
  kAdmitted,
  kAdmittedByEvicting,  // the server was full; an idle connection was evicted
                        // for it
  kTooManyInAll,
  kTooManyFromClient,
};

class ConnectionLimits : public std::enable_shared_from_this<ConnectionLimits> {
 public:
  // `open_connections` (not owned) follows the count of open connections.
  // REQUIRES: both limits at least 1.
  ConnectionLimits(size_t max_total, size_t max_per_client, Gauge* open_connections)
      : max_total_(max_total), max_per_client_(max_per_client), gauge_(open_connections) {}

  // A slot for a new connection from `client` (an IP address; "" exempts
  // it from the per-client limit and from eviction), evicting an idle
  // connection if the server is full (see above), or an empty slot and
  // *why if a limit is reached. REQUIRES: owned by a shared_ptr.
  ConnectionSlot TryAdmit(const std::string& client, Admission* why);

  size_t open() const;

 private:
  friend class ConnectionSlot;
  // A client's slots by admission order, oldest first.
  using Slots = std::map<uint64_t, std::shared_ptr<SlotRecord>>;

  // The oldest idle slot of the busiest client holding more than `held`,
  // now marked evicted; null if there is none. REQUIRES: mu_ held.
  std::shared_ptr<SlotRecord> EvictLocked(size_t held);
  void SetEvictor(SlotRecord& record, std::function<void()> evict);
  void Release(const SlotRecord& record);

  // Constant after construction.
  const size_t max_total_;
  const size_t max_per_client_;
  Gauge* const gauge_;

  mutable std::mutex mu_;
  // Protected by mu_, with each SlotRecord's evictor.
  size_t open_ = 0;
  uint64_t admitted_ = 0;                    // admissions so far: the next slot's order
  std::map<std::string, Slots> per_client_;  // clients with an open connection only
};

}  // namespace shoal

#endif  // SHOAL_SERVER_CONNECTION_LIMITS_H_
