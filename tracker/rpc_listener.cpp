#include "rpc_listener.h"

#include <arpa/inet.h>
#include <capnp/rpc-twoparty.h>
#include <kj/debug.h>
#include <sys/socket.h>

#include <map>

#include "gateway_service.h"
#include "rpc_frame_guard.h"
#include "rpc_tls.h"
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
  RpcTlsServer* tls;                           // null: plain
  std::map<std::string, uint32_t> per_client;  // open connections by IP; none: absent
};

// A connection's place in the counts, from accept (TLS handshake included)
// until it closes: among all connections, its IP's, and the
// unauthenticated ones until it presents a token (Authenticated).
class ConnectionSlot {
 public:
  ConnectionSlot(Shared& shared, std::string peer) : shared_(shared), peer_(std::move(peer)) {
    shared_.metrics.rpc_unauthenticated++;
    shared_.metrics.rpc_connections++;
    shared_.per_client[peer_]++;
  }
  ~ConnectionSlot() {
    Authenticated();
    shared_.metrics.rpc_connections--;
    auto it = shared_.per_client.find(peer_);
    if (--it->second == 0) shared_.per_client.erase(it);
  }
  KJ_DISALLOW_COPY(ConnectionSlot);
  void Authenticated() {
    if (!authenticated_) shared_.metrics.rpc_unauthenticated--;
    authenticated_ = true;
  }

 private:
  Shared& shared_;
  const std::string peer_;
  bool authenticated_ = false;
};

// Serves one connection with its own Gateway, which knows the peer's IP.
// Until the Gateway accepts a token the connection counts as
// unauthenticated: small messages only, and a deadline to authenticate.
class Connection {
 public:
  // `stream` is the connection after any TLS handshake; `accepted_at` is
  // when the socket was accepted, from which the authentication deadline
  // runs.
  Connection(kj::Own<kj::AsyncIoStream> stream, std::string peer, kj::Own<ConnectionSlot> slot,
             Shared& shared, kj::Timer& timer, kj::TimePoint accepted_at)
      : shared_(shared),
        timer_(timer),
        peer_(std::move(peer)),
        accepted_at_(accepted_at),
        slot_(kj::mv(slot)),
        stream_(kj::heap<FrameGuard>(kj::mv(stream), timer, kUnauthenticatedMessageBytes,
                                     shared.limits.message_timeout_ms * kj::MILLISECONDS)),
        network_(*stream_, capnp::rpc::twoparty::Side::SERVER),
        rpc_(capnp::makeRpcServer(
            network_, NewGateway(shared.gateway, peer_, [this] { Authenticated(); }))) {}
  KJ_DISALLOW_COPY(Connection);

  // Resolves when the connection should be dropped: the peer hung up, a
  // message was refused, or the peer did not authenticate in time.
  kj::Promise<void> Done() {
    auto refused = stream_->onRefused().then([this](FrameRefusal why) {
      (why == FrameRefusal::kTooLarge ? shared_.metrics.rpc_refused_too_large
                                      : shared_.metrics.rpc_refused_message_timeout)++;
      Closed(why == FrameRefusal::kTooLarge ? "message_too_large" : "message_timeout");
    });
    auto deadline = timer_.atTime(accepted_at_ + shared_.limits.auth_timeout_ms * kj::MILLISECONDS)
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
    slot_->Authenticated();
    stream_->set_message_limit_bytes(kAuthenticatedMessageBytes);
  }
  void Closed(const char* reason) {
    Log(LogLevel::kInfo, "rpc.connection_closed",
        {{"peer", peer_}, {"reason", std::string(reason)}, {"authenticated", authenticated_}});
  }

  Shared& shared_;
  kj::Timer& timer_;
  const std::string peer_;
  const kj::TimePoint accepted_at_;
  bool authenticated_ = false;
  kj::Own<ConnectionSlot> slot_;
  kj::Own<FrameGuard> stream_;
  capnp::TwoPartyVatNetwork network_;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc_;  // last: its Gateway calls Authenticated()
};

// Serves an accepted socket: with TLS, once its handshake completes, which
// must happen within the authentication deadline.
kj::Promise<void> ServeConnection(kj::Own<kj::AsyncIoStream> raw, Shared& shared,
                                  kj::Timer& timer) {
  std::string peer = PeerIp(*raw);
  auto slot = kj::heap<ConnectionSlot>(shared, peer);
  const kj::TimePoint accepted_at = timer.now();
  auto ready = [&]() -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
    if (shared.tls == nullptr) return kj::mv(raw);
    auto deadline = timer.atTime(accepted_at + shared.limits.auth_timeout_ms * kj::MILLISECONDS)
                        .then([]() -> kj::Own<kj::AsyncIoStream> {
                          KJ_FAIL_REQUIRE("TLS handshake not complete in time");
                        });
    return shared.tls->Accept(kj::mv(raw)).exclusiveJoin(kj::mv(deadline));
  }();
  return ready.then(
      [&shared, &timer, peer, slot = kj::mv(slot),
       accepted_at](kj::Own<kj::AsyncIoStream> stream) mutable {
        auto conn =
            kj::heap<Connection>(kj::mv(stream), peer, kj::mv(slot), shared, timer, accepted_at);
        auto done = conn->Done();
        return done.attach(kj::mv(conn));
      },
      [&shared, peer](kj::Exception&& e) {
        // Debug only: a port scan would otherwise flood the log.
        shared.metrics.rpc_refused_tls_handshake++;
        Log(LogLevel::kDebug, "rpc.connection_closed",
            {{"peer", peer},
             {"reason", std::string("tls_handshake")},
             {"error", std::string(e.getDescription().cStr())}});
      });
}

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
              tasks.add(ServeConnection(kj::mv(stream), shared, timer));
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
                           const GatewayDeps& gateway, const std::string& address,
                           RpcTlsServer* tls, uint16_t* port) {
  auto addr = io.provider->getNetwork().parseAddress(address).wait(io.waitScope);
  kj::Own<kj::ConnectionReceiver> listener = addr->listen();
  *port = static_cast<uint16_t>(listener->getPort());
  auto shared = kj::heap<Shared>(Shared{limits, metrics, gateway, tls, {}});
  auto logger = kj::heap<TaskErrorLog>(LogLevel::kWarn, "rpc.connection_error");
  auto tasks = kj::heap<kj::TaskSet>(*logger);
  auto loop = AcceptLoop(*listener, *shared, io.provider->getTimer(), *tasks);
  // Attached outermost, so it outlives the connections in `tasks`.
  return loop.attach(kj::mv(tasks), kj::mv(logger), kj::mv(listener)).attach(kj::mv(shared));
}

}  // namespace shoal::tracker
