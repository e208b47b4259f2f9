// Serves the Gateway over Cap'n Proto two-party RPC on a TCP address.
#ifndef SHOAL_TRACKER_RPC_LISTENER_H_
#define SHOAL_TRACKER_RPC_LISTENER_H_

#include <kj/async-io.h>

#include <string>

#include "tracker_context.h"

namespace shoal::tracker {

// Listens on `address` ("127.0.0.1:7400"; port 0 picks one) and serves
// every connection until the returned promise is dropped. *port receives
// the bound port.
//
// Before a connection authenticates (Gateway.authenticate or registerAgent
// accepts its token) it may send messages of at most 64 KiB, must
// authenticate within options.rpc_auth_timeout_ms, and counts against
// options.rpc_max_unauthenticated: a connection accepted beyond that is
// closed at once. Afterwards messages may reach Cap'n Proto's 64 MiB
// limit. Every message must arrive whole within
// options.rpc_message_timeout_ms of its first byte; idling between
// messages is fine. Each closure is counted in ctx.metrics.
kj::Promise<void> ServeRpc(kj::AsyncIoContext& io, TrackerContext& ctx, const std::string& address,
                           uint16_t* port);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RPC_LISTENER_H_
