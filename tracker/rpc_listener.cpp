#include "rpc_listener.h"

#include <capnp/rpc-twoparty.h>

#include "registry_service.h"

namespace shoal::tracker {

kj::Promise<void> ServeRpc(kj::AsyncIoContext& io, TrackerContext& ctx, const std::string& address,
                           uint16_t* port) {
  auto addr = io.provider->getNetwork().parseAddress(address).wait(io.waitScope);
  kj::Own<kj::ConnectionReceiver> listener = addr->listen();
  *port = static_cast<uint16_t>(listener->getPort());
  auto server = kj::heap<capnp::TwoPartyServer>(NewGateway(ctx));
  auto done = server->listen(*listener);
  return done.attach(kj::mv(server), kj::mv(listener));
}

}  // namespace shoal::tracker
