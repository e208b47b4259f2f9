#include "rpc_listener.h"

#include <arpa/inet.h>
#include <capnp/rpc-twoparty.h>
#include <kj/debug.h>
#include <sys/socket.h>

#include <map>
#include <string>

#include "gateway_service.h"
#include "rpc_frame_guard.h"
#include "shoal/log.h"
#include "task_error_log.h"
#include "tracker_metrics.h"

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

// What every connection shares; lives as long as the listener.
struct Shared {
  RpcLimits limits;
  TrackerMetrics& metrics;
  GatewayDeps gateway;
  std::map<std::string, uint32_t> per_client;  // open connections by IP; none: absent
};

// Serves one connection with its own Gateway, which knows the peer's IP.
// Until the Gateway accepts a token the connection counts as
// unauthenticated: small messages only, and a deadline to authenticate.
class Connection {
 public:
  Connection(kj::Own<kj::AsyncIoStream> raw, Shared& shared, kj::Timer& timer)
      : shared_(shared),
        timer_(timer),
        peer_(PeerIp(*raw)),
        stream_(kj::heap<FrameGuard>(kj::mv(raw), timer, kUnauthenticatedMessageBytes,
                                     shared.limits.message_timeout_ms * kj::MILLISECONDS)),
        network_(*stream_, capnp::rpc::twoparty::Side::SERVER),
        rpc_(capnp::makeRpcServer(network_,
                                  NewGateway(shared.gateway, peer_, [this] { Authenticated(); }))) {
    shared_.metrics.rpc_unauthenticated++;
    shared_.metrics.rpc_connections++;
    shared_.per_client[peer_]++;
  }
  ~Connection() {
    if (!authenticated_) shared_.metrics.rpc_unauthenticated--;
    shared_.metrics.rpc_connections--;
    auto it = shared_.per_client.find(peer_);
    if (--it->second == 0) shared_.per_client.erase(it);
  }
  KJ_DISALLOW_COPY(Connection);

  // Resolves when the connection should be dropped: the peer hung up, a
  // message was refused, or the peer did not authenticate in time.
  kj::Promise<void> Done() {
    auto refused = stream_->onRefused().then([this](FrameRefusal why) {
      (why == FrameRefusal::kTooLarge ? shared_.metrics.rpc_refused_too_large
                                      : shared_.metrics.rpc_refused_message_timeout)++;
      Closed(why == FrameRefusal::kTooLarge ? "message_too_large" : "message_timeout");
    });
    auto deadline = timer_.afterDelay(shared_.limits.auth_timeout_ms * kj::MILLISECONDS)
                        .then([this]() -> kj::Promise<void> {
                          if (authenticated_) return kj::NEVER_DONE;
                          shared_.metrics.rpc_refused_auth_timeout++;
                          Closed("auth_timeout");
                          return kj::READY_NOW;
                        });
    return network_.onDisconnect().exclusiveJoin(kj::mv(refused)).exclusiveJoin(kj::mv(deadline));
  }

 private:
  void Authenticated() {
    if (authenticated_) return;
    authenticated_ = true;
    shared_.metrics.rpc_unauthenticated--;
    stream_->set_message_limit_bytes(kAuthenticatedMessageBytes);
  }
  void Closed(const char* reason) {
    Log(LogLevel::kInfo, "rpc.connection_closed",
        {{"peer", peer_}, {"reason", std::string(reason)}, {"authenticated", authenticated_}});
  }

  Shared& shared_;
  kj::Timer& timer_;
  const std::string peer_;
  bool authenticated_ = false;
  kj::Own<FrameGuard> stream_;
  capnp::TwoPartyVatNetwork network_;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc_;  // last: its Gateway calls Authenticated()
};

// Why a new connection from `peer` must be closed at once, or null.
const char* Refusal(Shared& shared, const std::string& peer) {
  TrackerMetrics& m = shared.metrics;
  if (m.rpc_connections >= shared.limits.max_connections) {
    m.rpc_refused_connections++;
    return "too_many_connections";
  }
  auto mine = shared.per_client.find(peer);
  if (mine != shared.per_client.end() && mine->second >= shared.limits.max_per_client) {
    m.rpc_refused_per_client++;
    return "too_many_from_client";
  }
  if (m.rpc_unauthenticated >= shared.limits.max_unauthenticated) {
    m.rpc_refused_unauthenticated++;
    return "too_many_unauthenticated";
  }
  return nullptr;
}

kj::Promise<void> AcceptLoop(kj::ConnectionReceiver& listener, Shared& shared, kj::Timer& timer,
                             kj::TaskSet& tasks) {
  // evalNow: kj's accept() tries accept(2) at once and may throw right
  // here, not only through the promise.
  return kj::evalNow([&] { return listener.accept(); })
      .then(
          [&](kj::Own<kj::AsyncIoStream>&& stream) {
            std::string peer = PeerIp(*stream);
            if (const char* why = Refusal(shared, peer)) {
              // Dropping the stream closes it. Logged at debug only: a flood of
              // these would otherwise flood the log.
              Log(LogLevel::kDebug, "rpc.connection_refused",
                  {{"peer", peer}, {"reason", std::string(why)}});
            } else {
              auto conn = kj::heap<Connection>(kj::mv(stream), shared, timer);
              auto done = conn->Done();
              tasks.add(done.attach(kj::mv(conn)));
            }
            return AcceptLoop(listener, shared, timer, tasks);
          },
          [&](kj::Exception&& e) {
            // Out of descriptors, most likely: back off and try again, instead of
            // spinning or ending the listener (and with it the tracker).
            shared.metrics.rpc_accept_errors++;
            Log(LogLevel::kWarn, "rpc.accept_failed",
                {{"error", std::string(e.getDescription().cStr())}});
            return timer.afterDelay(100 * kj::MILLISECONDS).then([&] {
              return AcceptLoop(listener, shared, timer, tasks);
            });
          });
}

}  // namespace

kj::Promise<void> ServeRpc(kj::AsyncIoContext& io, const RpcLimits& limits, TrackerMetrics& metrics,
                           const GatewayDeps& gateway, const std::string& address, uint16_t* port) {
  auto addr = io.provider->getNetwork().parseAddress(address).wait(io.waitScope);
  kj::Own<kj::ConnectionReceiver> listener = addr->listen();
  *port = static_cast<uint16_t>(listener->getPort());
  auto shared = kj::heap<Shared>(Shared{limits, metrics, gateway, {}});
  auto logger = kj::heap<TaskErrorLog>(LogLevel::kWarn, "rpc.connection_error");
  auto tasks = kj::heap<kj::TaskSet>(*logger);
  auto loop = AcceptLoop(*listener, *shared, io.provider->getTimer(), *tasks);
  // Attached outermost, so it outlives the connections in `tasks`.
  return loop.attach(kj::mv(tasks), kj::mv(logger), kj::mv(listener)).attach(kj::mv(shared));
}

}  // namespace shoal::tracker
