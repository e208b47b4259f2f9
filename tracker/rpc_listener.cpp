#include "rpc_listener.h"

#include <arpa/inet.h>
#include <capnp/rpc-twoparty.h>
#include <kj/debug.h>
#include <sys/socket.h>

#include "registry_service.h"
#include "rpc_frame_guard.h"
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

// Largest message before the peer authenticates: a token, or an agent's
// registration, fits with room to spare.
constexpr uint64_t kUnauthenticatedMessageBytes = 64 << 10;
// After: Cap'n Proto's own traversal limit (8 Mi words), which a large
// manifest may approach.
constexpr uint64_t kAuthenticatedMessageBytes = uint64_t{8} << 20 << 3;

// Serves one connection with its own Gateway, which knows the peer's IP.
// Until the Gateway accepts a token the connection counts as
// unauthenticated: small messages only, and a deadline to authenticate.
class Connection {
 public:
  Connection(kj::Own<kj::AsyncIoStream> raw, TrackerContext& ctx, kj::Timer& timer)
      : ctx_(ctx),
        timer_(timer),
        peer_(PeerIp(*raw)),
        stream_(kj::heap<FrameGuard>(kj::mv(raw), timer, kUnauthenticatedMessageBytes,
                                     ctx.options.rpc_message_timeout_ms * kj::MILLISECONDS)),
        network_(*stream_, capnp::rpc::twoparty::Side::SERVER),
        rpc_(capnp::makeRpcServer(network_, NewGateway(ctx, peer_, [this] { Authenticated(); }))) {
    ctx_.metrics.rpc_unauthenticated++;
  }
  ~Connection() {
    if (!authenticated_) ctx_.metrics.rpc_unauthenticated--;
  }
  KJ_DISALLOW_COPY(Connection);

  // Resolves when the connection should be dropped: the peer hung up, a
  // message was refused, or the peer did not authenticate in time.
  kj::Promise<void> Done() {
    auto refused = stream_->onRefused().then([this](FrameRefusal why) {
      (why == FrameRefusal::kTooLarge ? ctx_.metrics.rpc_refused_too_large
                                      : ctx_.metrics.rpc_refused_message_timeout)++;
      Closed(why == FrameRefusal::kTooLarge ? "message_too_large" : "message_timeout");
    });
    auto deadline = timer_.afterDelay(ctx_.options.rpc_auth_timeout_ms * kj::MILLISECONDS)
                        .then([this]() -> kj::Promise<void> {
                          if (authenticated_) return kj::NEVER_DONE;
                          ctx_.metrics.rpc_refused_auth_timeout++;
                          Closed("auth_timeout");
                          return kj::READY_NOW;
                        });
    return network_.onDisconnect().exclusiveJoin(kj::mv(refused)).exclusiveJoin(kj::mv(deadline));
  }

 private:
  void Authenticated() {
    if (authenticated_) return;
    authenticated_ = true;
    ctx_.metrics.rpc_unauthenticated--;
    stream_->set_message_limit_bytes(kAuthenticatedMessageBytes);
  }
  void Closed(const char* reason) {
    Log(LogLevel::kInfo, "rpc.connection_closed",
        {{"peer", peer_}, {"reason", std::string(reason)}, {"authenticated", authenticated_}});
  }

  TrackerContext& ctx_;
  kj::Timer& timer_;
  const std::string peer_;
  bool authenticated_ = false;
  kj::Own<FrameGuard> stream_;
  capnp::TwoPartyVatNetwork network_;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc_;  // last: its Gateway calls Authenticated()
};

class ErrorLogger final : public kj::TaskSet::ErrorHandler {
 public:
  void taskFailed(kj::Exception&& e) override {
    Log(LogLevel::kWarn, "rpc.connection_error", {{"error", std::string(e.getDescription().cStr())}});
  }
};

kj::Promise<void> AcceptLoop(kj::ConnectionReceiver& listener, TrackerContext& ctx, kj::Timer& timer,
                             kj::TaskSet& tasks) {
  return listener.accept().then([&](kj::Own<kj::AsyncIoStream>&& stream) {
    if (ctx.metrics.rpc_unauthenticated >= ctx.options.rpc_max_unauthenticated) {
      // Dropping the stream closes it. Logged at debug only: a flood of
      // these would otherwise flood the log.
      ctx.metrics.rpc_refused_unauthenticated++;
      Log(LogLevel::kDebug, "rpc.connection_refused",
          {{"peer", PeerIp(*stream)}, {"reason", std::string("too_many_unauthenticated")}});
    } else {
      auto conn = kj::heap<Connection>(kj::mv(stream), ctx, timer);
      auto done = conn->Done();
      tasks.add(done.attach(kj::mv(conn)));
    }
    return AcceptLoop(listener, ctx, timer, tasks);
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
  auto loop = AcceptLoop(*listener, ctx, io.provider->getTimer(), *tasks);
  return loop.attach(kj::mv(tasks), kj::mv(logger), kj::mv(listener));
}

}  // namespace shoal::tracker
