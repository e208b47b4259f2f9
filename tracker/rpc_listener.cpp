#include "rpc_listener.h"

#include <arpa/inet.h>
#include <capnp/rpc-twoparty.h>
#include <kj/debug.h>
#include <sys/socket.h>

#include "registry_service.h"
#include "shoal/log.h"

namespace shoal::tracker {
namespace {

std::string PeerIp(kj::AsyncIoStream& conn) {
  sockaddr_storage addr;
  kj::uint len = sizeof(addr);
  conn.getpeername(reinterpret_cast<sockaddr*>(&addr), &len);
  char buf[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, buf, sizeof(buf));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// Serves one connection with its own Gateway, which knows the peer's IP.
struct Connection {
  Connection(kj::Own<kj::AsyncIoStream> s, TrackerContext& ctx)
      : stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::SERVER),
        rpc(capnp::makeRpcServer(network, NewGateway(ctx, PeerIp(*stream)))) {}
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

class ErrorLogger final : public kj::TaskSet::ErrorHandler {
 public:
  void taskFailed(kj::Exception&& e) override {
    Log(LogLevel::kWarn, "rpc.connection_error", {{"error", std::string(e.getDescription().cStr())}});
  }
};

kj::Promise<void> AcceptLoop(kj::ConnectionReceiver& listener, TrackerContext& ctx, kj::TaskSet& tasks) {
  return listener.accept().then([&](kj::Own<kj::AsyncIoStream>&& stream) {
    auto conn = kj::heap<Connection>(kj::mv(stream), ctx);
    auto done = conn->network.onDisconnect();
    tasks.add(done.attach(kj::mv(conn)));
    return AcceptLoop(listener, ctx, tasks);
  });
}

}  // namespace

kj::Promise<void> ServeRpc(kj::AsyncIoContext& io, TrackerContext& ctx, const std::string& address,
                           uint16_t* port) {
  auto addr = io.provider->getNetwork().parseAddress(address).wait(io.waitScope);
  kj::Own<kj::ConnectionReceiver> listener = addr->listen();
  *port = static_cast<uint16_t>(listener->getPort());
  auto logger = kj::heap<ErrorLogger>();
  auto tasks = kj::heap<kj::TaskSet>(*logger);
  auto loop = AcceptLoop(*listener, ctx, *tasks);
  return loop.attach(kj::mv(tasks), kj::mv(logger), kj::mv(listener));
}

}  // namespace shoal::tracker
