// Serves the Gateway over Cap'n Proto two-party RPC on a TCP address.
#ifndef SHOAL_TRACKER_RPC_LISTENER_H_
#define SHOAL_TRACKER_RPC_LISTENER_H_

#include <kj/async-io.h>

#include <cstdint>
#include <string>

namespace shoal {
class RpcTlsServer;
}

namespace shoal::tracker {

struct GatewayDeps;
struct TrackerMetrics;

// What a connection may do before and while it authenticates.
struct RpcLimits {
  int64_t auth_timeout_ms = 10000;     // to present a token
  int64_t message_timeout_ms = 30000;  // for a message to arrive whole after its first byte
  uint32_t max_unauthenticated = 256;  // connections without a token at once
  uint32_t max_connections = 4096;     // connections at once, authenticated or not
  uint32_t max_per_client = 128;       // ... from one IP address
};

// Listens on `address` ("127.0.0.1:7400"; port 0 picks one) and serves
// every connection until the returned promise is dropped. *port receives
// the bound port. With `tls` (which must outlive the promise) every
// connection speaks TLS; its handshake must complete within the
// authentication deadline, and a failed one is closed and counted.
//
// Before a connection authenticates (Gateway.authenticate or registerAgent
// accepts its token) it may send messages of at most 64 KiB, must
// authenticate within limits.auth_timeout_ms, and counts against
// limits.max_unauthenticated: a connection accepted beyond that is closed
// at once. So is one beyond limits.max_connections open in all, or beyond
// limits.max_per_client from its IP address, authenticated ones included.
// Afterwards messages may reach Cap'n Proto's 64 MiB limit. Every message
// must arrive whole within limits.message_timeout_ms of its first byte;
// idling between messages is fine. A failed accept (out of descriptors)
// backs off 100 ms and the listener goes on. Each closure is counted in
// `metrics`. Each connection gets its own Gateway built from `gateway`,
// whose references, like `metrics`, must outlive the returned promise.
kj::Promise<void> ServeRpc(kj::AsyncIoContext& io, const RpcLimits& limits, TrackerMetrics& metrics,
                           const GatewayDeps& gateway, const std::string& address,
                           RpcTlsServer* tls, uint16_t* port);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RPC_LISTENER_H_
