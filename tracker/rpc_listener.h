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
kj::Promise<void> ServeRpc(kj::AsyncIoContext& io, TrackerContext& ctx, const std::string& address,
                           uint16_t* port);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RPC_LISTENER_H_
