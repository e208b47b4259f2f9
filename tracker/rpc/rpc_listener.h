// Serves the Gateway over Cap'n Proto two-party RPC on a TCP address, from
// several event-loop threads.
#ifndef SHOAL_TRACKER_RPC_LISTENER_H_
#define SHOAL_TRACKER_RPC_LISTENER_H_

#include <kj/async-io.h>
#include <kj/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rpc/rpc_admission.h"
#include "shoal/status.h"

namespace shoal {
class Histogram;
struct TlsServerPem;
}  // namespace shoal

namespace shoal::tracker {

struct GatewayDeps;
struct TrackerMetrics;

// What the server serves, and how. References and pointers must outlive
// the server.
struct RpcServeOptions {
  int threads = 2;  // event loops, each accepting and serving its own connections
  RpcLimits limits;
  TrackerMetrics* metrics = nullptr;
  const GatewayDeps* gateway = nullptr;
  const TlsServerPem* tls = nullptr;  // null: plain
  Histogram* loop_lag = nullptr;      // each loop's lag (SampleLoopLag); null: none
};

// Serves RPC connections from `threads` event-loop threads of its own, so a
// tracker answers with every core it has. The threads share one listening
// socket; each takes the connections it accepts and serves them to the end,
// with a Gateway of its own (NewGateway) on its loop. The Gateway's parts
// are shared across the loops: they are thread-safe, or reached through the
// scheduler's loop (WarmDeps, AgentControls).
//
// With `tls` every connection speaks TLS; its handshake must complete within
// the authentication deadline, and a failed one is closed and counted.
// Before a connection authenticates (Gateway.authenticate or registerAgent
// accepts its token) it may send messages of at most 64 KiB, must
// authenticate within limits.auth_timeout_ms, and counts against
// limits.max_unauthenticated and, from its IP address,
// limits.max_unauthenticated_per_client; once the first is full, a newcomer
// takes the place of the busiest address's oldest tokenless connection (see
// rpc_admission.h). A connection that cannot be admitted, or is beyond
// limits.max_connections open in all or limits.max_per_client from its IP
// address (authenticated ones included), is told why in a Cap'n Proto Abort
// message (after its TLS handshake, with TLS) and closed; past 64 refusals
// under way at once, the rest are closed without a word.
// Afterwards messages may reach Cap'n Proto's 64 MiB limit. Every message
// must arrive whole within limits.message_timeout_ms of its first byte;
// idling between messages is fine. A failed accept (out of descriptors)
// backs off 100 ms and the loop goes on. Each closure is counted in
// `metrics`.
//
// Thread-safety: Listen, Start and Stop on one thread, the one whose loop
// the connections' calls into the scheduler go to.
class RpcServer {
 public:
  // Binds `address` ("127.0.0.1:7400"; port 0 picks one) and listens; no
  // connection is accepted before Start. InvalidArgument for a malformed
  // address, IOError if it cannot be bound.
  static Result<std::unique_ptr<RpcServer>> Listen(const std::string& address);
  ~RpcServer();  // Stop()s if Start()ed and not stopped
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  uint16_t port() const { return port_; }

  // Starts the threads; they accept and serve until Stop. A thread that
  // fails outside any connection logs why and sends the process SIGTERM.
  void Start(const RpcServeOptions& options);

  // Stops accepting, closes every connection and joins the threads. Runs
  // the calling thread's event loop (`wait_scope`) meanwhile, so what the
  // connections asked of it can finish or be cancelled.
  void Stop(kj::WaitScope& wait_scope);

  struct Shared;  // what the loops share; defined in rpc_listener.cpp

 private:
  struct Loop;
  RpcServer(int fd, uint16_t port);

  const int fd_;  // the listening socket; each loop serves a duplicate
  const uint16_t port_;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Loop>> loops_;
  kj::Vector<kj::Promise<void>> stopped_;  // one per loop, on the starting thread's loop
};

// Every 10 ms, how late `timer`'s loop runs a timer that is due, into
// `lag`: a call arriving then waits about as long before the loop reads it,
// so the tail of these is the tail the loop adds to every request.
kj::Promise<void> SampleLoopLag(kj::Timer& timer, Histogram& lag);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RPC_LISTENER_H_
