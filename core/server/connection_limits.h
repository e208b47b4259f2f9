// ConnectionLimits: how many connections a server holds in all and from
// each client, and the slots that count them. Private to shoal_server.
//
//   ConnectionLimits limits(4096, 256);
//   ConnectionSlot slot = limits.TryAdmit("10.0.0.7");
//   if (!slot) { refuse; }   // the slot is released when it is destroyed
//
// Thread-safety: TryAdmit and slot destruction may run on any thread.
#ifndef SHOAL_SERVER_CONNECTION_LIMITS_H_
#define SHOAL_SERVER_CONNECTION_LIMITS_H_

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "shoal/server/metrics.h"

namespace shoal {

class ConnectionLimits;

// One admitted connection; movable, and released on destruction. Empty if
// the connection was refused.
class ConnectionSlot {
 public:
  ConnectionSlot() = default;
  ConnectionSlot(ConnectionSlot&& other) noexcept;
  ConnectionSlot& operator=(ConnectionSlot&& other) noexcept;
  ~ConnectionSlot();

  explicit operator bool() const { return limits_ != nullptr; }

 private:
  friend class ConnectionLimits;
  ConnectionSlot(std::shared_ptr<ConnectionLimits> limits, std::string client)
      : limits_(std::move(limits)), client_(std::move(client)) {}
  void Release();

  std::shared_ptr<ConnectionLimits> limits_;
  std::string client_;  // "" for a client exempt from the per-client count
};

enum class Admission { kAdmitted, kTooManyInAll, kTooManyFromClient };

class ConnectionLimits : public std::enable_shared_from_this<ConnectionLimits> {
 public:
  // `open_connections` (not owned) follows the count of open connections.
  // REQUIRES: both limits at least 1.
  ConnectionLimits(size_t max_total, size_t max_per_client, Gauge* open_connections)
      : max_total_(max_total), max_per_client_(max_per_client), gauge_(open_connections) {}

  // A slot for a new connection from `client` (an IP address; "" exempts
  // it from the per-client limit), or an empty slot and *why if either
  // limit is reached. REQUIRES: owned by a shared_ptr.
  ConnectionSlot TryAdmit(const std::string& client, Admission* why);

  size_t open() const;

 private:
  friend class ConnectionSlot;
  void Release(const std::string& client);

  // Constant after construction.
  const size_t max_total_;
  const size_t max_per_client_;
  Gauge* const gauge_;

  mutable std::mutex mu_;
  // Protected by mu_.
  size_t open_ = 0;
  std::map<std::string, size_t> per_client_;  // clients with an open connection only
};

}  // namespace shoal

#endif  // SHOAL_SERVER_CONNECTION_LIMITS_H_
