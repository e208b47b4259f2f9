#include "rpc/rpc_listener.h"

#include <arpa/inet.h>
#include <capnp/message.h>
#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize-async.h>
#include <fcntl.h>
#include <kj/debug.h>
#include <kj/one-of.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/tracker_metrics.h"
#include "proto/kj_status.h"
#include "proto/rpc_tls.h"
#include "proto/task_error_log.h"
#include "rpc/gateway_service.h"
#include "rpc/rpc_frame_guard.h"
#include "shoal/host_port.h"
#include "shoal/log.h"
#include "shoal/server/metrics.h"
#include "shoal/tls_files.h"

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

// Reads and drops what `s` sends until it ends.
kj::Promise<void> DrainUntilEnd(kj::AsyncIoStream& s, kj::Array<kj::byte>& buf) {
  return s.tryRead(buf.begin(), 1, buf.size()).then([&s, &buf](size_t n) -> kj::Promise<void> {
    if (n == 0) return kj::READY_NOW;
    return DrainUntilEnd(s, buf);
  });
}

// Largest message before the peer authenticates: a token, or an agent's
// registration, fits with room to spare.
constexpr uint64_t kUnauthenticatedMessageBytes = 64 << 10;
// After: Cap'n Proto's own traversal limit (8 Mi words), which a large
// manifest may approach.
constexpr uint64_t kAuthenticatedMessageBytes = uint64_t{8} << 20 << 3;

}  // namespace

// What every connection of every loop shares; lives as long as the server.
struct RpcServer::Shared {
  Shared(const RpcServeOptions& o)
      : limits(o.limits),
        metrics(*o.metrics),
        gateway(*o.gateway),
        admission(o.limits, *o.metrics) {}
  const RpcLimits limits;
  TrackerMetrics& metrics;
  const GatewayDeps gateway;
  RpcAdmission admission;
  std::atomic<int> refusing{0};  // refusals telling their client why, under way
};

namespace {

using Shared = RpcServer::Shared;

// Serves one connection with its own Gateway, which knows the peer's IP.
// Until the Gateway accepts a token the connection counts as
// unauthenticated: small messages only, and a deadline to authenticate.
class Connection {
 public:
  // `stream` is the connection after any TLS handshake; `accepted_at` is
  // when the socket was accepted, from which the authentication deadline
  // runs.
  Connection(kj::Own<kj::AsyncIoStream> stream, std::string peer, kj::Own<RpcSlot> slot,
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
            network_, NewGateway(shared.gateway, peer_, timer, [this] { Authenticated(); }))) {}
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
    // Debug only, as refusals are: evictions come in floods.
    auto evicted = slot_->Evicted().then([this] {
      Log(LogLevel::kDebug, "rpc.connection_closed",
          {{"peer", peer_}, {"reason", std::string("evicted_unauthenticated")}});
    });
    return network_.onDisconnect()
        .exclusiveJoin(kj::mv(refused))
        .exclusiveJoin(kj::mv(deadline))
        .exclusiveJoin(kj::mv(evicted));
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
  kj::Own<RpcSlot> slot_;
  kj::Own<FrameGuard> stream_;
  capnp::TwoPartyVatNetwork network_;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc_;  // last: its Gateway calls Authenticated()
};

// Serves an accepted socket, which `slot` counts: with TLS (`tls`, this
// loop's), once its handshake completes, which must happen within the
// authentication deadline.
kj::Promise<void> ServeConnection(kj::Own<kj::AsyncIoStream> raw, std::string peer,
                                  kj::Own<RpcSlot> slot, Shared& shared, kj::Timer& timer,
                                  RpcTlsServer* tls) {
  const kj::TimePoint accepted_at = timer.now();
  auto ready = [&]() -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
    if (tls == nullptr) return kj::mv(raw);
    auto deadline = timer.atTime(accepted_at + shared.limits.auth_timeout_ms * kj::MILLISECONDS)
                        .then([]() -> kj::Own<kj::AsyncIoStream> {
                          KJ_FAIL_REQUIRE("TLS handshake not complete in time");
                        });
    // Evicted mid-handshake: no stream, and not counted as a failed handshake.
    auto evicted = slot->Evicted().then([] { return kj::Own<kj::AsyncIoStream>(); });
    return tls->Accept(kj::mv(raw)).exclusiveJoin(kj::mv(deadline)).exclusiveJoin(kj::mv(evicted));
  }();
  return ready.then(
      [&shared, &timer, peer, slot = kj::mv(slot),
       accepted_at](kj::Own<kj::AsyncIoStream> stream) mutable -> kj::Promise<void> {
        if (stream.get() == nullptr) return kj::READY_NOW;
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

// Tells a refused client why, as an RPC Abort message (which its RpcSystem
// reports as the failure of its calls), then closes: after the TLS
// handshake if the port speaks TLS, and reading what the client sent
// meanwhile for up to a second, so that its kernel gets the message before
// a reset. Bounded by kMaxRefusing at once; past that, just closes.
constexpr int kMaxRefusing = 64;
constexpr auto kRefusalTimeout = 1000 * kj::MILLISECONDS;

kj::Promise<void> Refuse(kj::Own<kj::AsyncIoStream> raw, const RpcRefusal& why, Shared& shared,
                         kj::Timer& timer, RpcTlsServer* tls) {
  if (shared.refusing.fetch_add(1) >= kMaxRefusing) {
    shared.refusing--;
    return kj::READY_NOW;
  }
  auto ready = tls == nullptr ? kj::Promise<kj::Own<kj::AsyncIoStream>>(kj::mv(raw))
                              : tls->Accept(kj::mv(raw));
  const std::string message = why.message;
  auto told = ready.then([message](kj::Own<kj::AsyncIoStream> stream) {
    auto msg = kj::heap<capnp::MallocMessageBuilder>();
    auto abort = msg->initRoot<capnp::rpc::Message>().initAbort();
    abort.setType(capnp::rpc::Exception::Type::OVERLOADED);
    abort.setReason(ExceptionFromStatus(Status::Unavailable(message)).getDescription());
    auto& s = *stream;
    auto& m = *msg;
    return capnp::writeMessage(s, m)
        .then([&s] {
          s.shutdownWrite();
          auto buf = kj::heap<kj::Array<kj::byte>>(kj::heapArray<kj::byte>(4096));
          auto& b = *buf;
          return DrainUntilEnd(s, b).attach(kj::mv(buf));
        })
        .attach(kj::mv(msg), kj::mv(stream));
  });
  return told.exclusiveJoin(timer.afterDelay(kRefusalTimeout))
      .then([] {}, [](kj::Exception&&) {})
      .attach(kj::defer([&shared] { shared.refusing--; }));
}

kj::Promise<void> AcceptLoop(kj::ConnectionReceiver& listener, Shared& shared, kj::Timer& timer,
                             kj::TaskSet& tasks, RpcTlsServer* tls) {
  // evalNow: kj's accept() tries accept(2) at once and may throw right
  // here, not only through the promise.
  return kj::evalNow([&] { return listener.accept(); })
      .then(
          [&, tls](kj::Own<kj::AsyncIoStream>&& stream) {
            std::string peer = PeerIp(*stream);
            auto admitted = shared.admission.Admit(peer);
            if (admitted.is<RpcRefusal>()) {
              // Logged at debug only: a flood of these would otherwise flood
              // the log.
              const RpcRefusal& why = admitted.get<RpcRefusal>();
              Log(LogLevel::kDebug, "rpc.connection_refused",
                  {{"peer", peer}, {"reason", std::string(why.reason)}});
              tasks.add(Refuse(kj::mv(stream), why, shared, timer, tls));
            } else {
              tasks.add(ServeConnection(kj::mv(stream), peer,
                                        kj::mv(admitted.get<kj::Own<RpcSlot>>()), shared, timer,
                                        tls));
            }
            return AcceptLoop(listener, shared, timer, tasks, tls);
          },
          [&, tls](kj::Exception&& e) {
            // Out of descriptors, most likely: back off and try again, instead of
            // spinning or ending the listener (and with it the tracker).
            shared.metrics.rpc_accept_errors++;
            Log(LogLevel::kWarn, "rpc.accept_failed",
                {{"error", std::string(e.getDescription().cStr())}});
            return timer.afterDelay(100 * kj::MILLISECONDS).then([&, tls] {
              return AcceptLoop(listener, shared, timer, tasks, tls);
            });
          });
}

}  // namespace

// One serving thread and its event loop.
struct RpcServer::Loop {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;  // stop is set; protected by mu
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stopped;  // fulfilled on the thread's way out

  // The thread's body: serves until `stop` is fulfilled, then closes its
  // connections on its own loop.
  void Run(Shared& shared, int listen_fd, const RpcServeOptions& o) {
    auto io = kj::setupAsyncIo();
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    {
      std::lock_guard<std::mutex> l(mu);
      stop = kj::mv(paf.fulfiller);
      started = true;
    }
    cv.notify_all();
    KJ_IF_MAYBE (e,
                 kj::runCatchingExceptions([&] { Serve(io, shared, listen_fd, o, paf.promise); })) {
      Log(LogLevel::kError, "rpc.loop_failed",
          {{"error", std::string(e->getDescription().cStr())}});
      ::kill(::getpid(), SIGTERM);
    }
    stopped->fulfill();
  }

  static void Serve(kj::AsyncIoContext& io, Shared& shared, int listen_fd, const RpcServeOptions& o,
                    kj::Promise<void>& stop_promise) {
    std::unique_ptr<RpcTlsServer> tls;
    if (o.tls != nullptr) {
      auto created = RpcTlsServer::Create(*o.tls);
      KJ_REQUIRE(created.ok(), created.status().ToString());
      tls = std::move(created).value();
    }
    int fd = ::fcntl(listen_fd, F_DUPFD_CLOEXEC, 0);
    KJ_SYSCALL(fd);
    auto listener = io.lowLevelProvider->wrapListenSocketFd(
        fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC |
                kj::LowLevelAsyncIoProvider::ALREADY_NONBLOCK);
    TaskErrorLog logger(LogLevel::kWarn, "rpc.connection_error");
    kj::TaskSet tasks(logger);
    kj::Promise<void> lag = kj::NEVER_DONE;
    if (o.loop_lag != nullptr) {
      lag = SampleLoopLag(io.provider->getTimer(), *o.loop_lag).eagerlyEvaluate(nullptr);
    }
    AcceptLoop(*listener, shared, io.provider->getTimer(), tasks, tls.get())
        .exclusiveJoin(kj::mv(stop_promise))
        .wait(io.waitScope);
  }
};

RpcServer::RpcServer(int fd, uint16_t port) : fd_(fd), port_(port) {}

Result<std::unique_ptr<RpcServer>> RpcServer::Listen(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  SHOAL_RETURN_IF_ERROR(SplitHostPort(address, &host, &port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) return Status::InvalidArgument("resolve " + address + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owned(found, ::freeaddrinfo);
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IOError("socket for " + address + ": " + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    Status s = Status::IOError("listen on " + address + ": " + std::strerror(errno));
    ::close(fd);
    return s;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const uint16_t bound_port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::unique_ptr<RpcServer>(new RpcServer(fd, bound_port));
}

void RpcServer::Start(const RpcServeOptions& options) {
  KJ_REQUIRE(loops_.empty(), "RpcServer started twice");
  shared_ = std::make_unique<Shared>(options);
  for (int i = 0; i < std::max(1, options.threads); ++i) {
    auto loop = std::make_unique<Loop>();
    Loop* l = loop.get();
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    l->stopped = kj::mv(paf.fulfiller);
    stopped_.add(kj::mv(paf.promise));
    l->thread = std::thread([this, l, options, i] {
      // Named, so `top -H` and `perf sched` tell the loops apart.
      pthread_setname_np(pthread_self(), ("shoal-rpc-" + std::to_string(i)).c_str());
      l->Run(*shared_, fd_, options);
    });
    std::unique_lock<std::mutex> lock(l->mu);
    l->cv.wait(lock, [l] { return l->started; });
    loops_.push_back(std::move(loop));
  }
}

void RpcServer::Stop(kj::WaitScope& wait_scope) {
  for (auto& l : loops_) l->stop->fulfill();
  kj::joinPromises(stopped_.releaseAsArray()).wait(wait_scope);
  for (auto& l : loops_) l->thread.join();
  loops_.clear();
}

RpcServer::~RpcServer() {
  if (!loops_.empty()) {
    for (auto& l : loops_) l->stop->fulfill();
    for (auto& l : loops_) l->thread.join();
  }
  ::close(fd_);
}

kj::Promise<void> SampleLoopLag(kj::Timer& timer, Histogram& lag) {
  constexpr auto kEvery = std::chrono::milliseconds(10);
  const auto due = std::chrono::steady_clock::now() + kEvery;
  return timer.afterDelay(kEvery.count() * kj::MILLISECONDS).then([&timer, &lag, due] {
    lag.Observe(std::max(
        0.0, std::chrono::duration<double>(std::chrono::steady_clock::now() - due).count()));
    return SampleLoopLag(timer, lag);
  });
}

}  // namespace shoal::tracker
