// Bytes an RPC client sends to the tracker, served as tracker/rpc/rpc_listener.cpp
// serves a connection: through a FrameGuard with the unauthenticated
// message limit (raised when a token is accepted), into a Cap'n Proto
// two-party RpcSystem whose bootstrap is the real Gateway, over an
// in-process pipe. The Gateway and the Registry and AgentSession it hands
// out run against a real tracker: a LevelDB registry, a folder origin and
// a peer CA in a temporary folder, with the token secret of the seeds.
//
// So each input is a stream of Cap'n Proto RPC messages: Bootstrap, then
// calls such as authenticate(token) and, pipelined on its result, the
// Registry's. The seeds are the bytes real clients wrote for such sessions
// (seed_writer.cpp), with tokens this tracker accepts. The registry keeps
// what earlier inputs committed; each input is one connection.
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "fuzz/fuzz_check.h"
#include "rpc/gateway_service.h"
#include "rpc/rpc_frame_guard.h"
#include "serve/tracker_context.h"
#include "serve/tracker_wiring.h"

namespace {

using shoal::fuzz::Check;
namespace tracker = shoal::tracker;

// rpc_listener.cpp's limits: 64 KiB until authenticated, then 64 MiB.
constexpr uint64_t kUnauthenticatedMessageBytes = 64 << 10;
constexpr uint64_t kAuthenticatedMessageBytes = uint64_t{8} << 20 << 3;

template <typename T>
T Must(shoal::Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "fuzz_tracker_rpc: %s: %s\n", what, r.status().message().c_str());
    std::abort();
  }
  return std::move(r).value();
}

// A tracker, wired as tracker_main.cpp wires one, in a temporary folder.
struct Tracker {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  std::string dir;
  std::unique_ptr<tracker::RegistryStore> store;
  std::unique_ptr<shoal::TokenAuthority> tokens;
  std::unique_ptr<shoal::ManifestSigner> signer;
  std::unique_ptr<shoal::PeerCa> ca;
  std::unique_ptr<shoal::Origin> origin;
  std::unique_ptr<tracker::TrackerContext> ctx;
  std::unique_ptr<tracker::GatewayDeps> gateway;

  Tracker() {
    char tmpl[] = "/tmp/shoal-fuzz-tracker-XXXXXX";
    Check(mkdtemp(tmpl) != nullptr, "cannot make a temporary folder");
    dir = tmpl;
    std::filesystem::create_directories(dir + "/origin");
    tracker::TrackerOptions o;
    o.data_dir = dir;
    o.origin.url = "file://" + dir + "/origin";
    o.blocking_threads = 2;
    store = Must(tracker::RegistryStore::Open(dir + "/registry"), "registry");
    tokens = std::make_unique<shoal::TokenAuthority>(
        Must(shoal::TokenAuthority::FromSecret(shoal::fuzz::kTokenSecret), "token secret"));
    signer = Must(shoal::ManifestSigner::LoadOrCreate(dir + "/signing.key"), "signing key");
    ca = Must(shoal::PeerCa::LoadOrCreate(dir), "peer CA");
    origin = Must(shoal::OpenOrigin(o.origin), "origin");
    ctx = std::make_unique<tracker::TrackerContext>(o, *store, *tokens, *signer, ca.get(), *origin);
    ctx->http_port = 7401;
    Check(ctx->tokens.Load().ok(), "cannot load the revocations");
    gateway.reset(new tracker::GatewayDeps(tracker::GatewayDepsOf(*ctx)));
  }
};

// Reads and drops what the server answers, so its writes never wait.
kj::Promise<void> Drain(kj::AsyncIoStream& client, kj::byte* buffer, size_t size) {
  return client.tryRead(buffer, 1, size)
      .then([&client, buffer, size](size_t n) -> kj::Promise<void> {
        if (n == 0) return kj::READY_NOW;
        return Drain(client, buffer, size);
      });
}

// Never destroyed (its threads may still hold work at exit); its folder is
// removed when libFuzzer exits normally.
Tracker* TheTracker() {
  static Tracker* t = new Tracker;
  static const bool cleanup = std::atexit([] {
                                std::error_code ec;
                                std::filesystem::remove_all(t->dir, ec);
                              }) == 0;
  (void)cleanup;
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Tracker* t = TheTracker();
  kj::Timer& timer = t->io.provider->getTimer();
  auto pipe = kj::newTwoWayPipe();
  kj::Own<kj::AsyncIoStream> client = kj::mv(pipe.ends[1]);
  auto guard = kj::heap<tracker::FrameGuard>(kj::mv(pipe.ends[0]), timer,
                                             kUnauthenticatedMessageBytes, 30 * kj::SECONDS);
  tracker::FrameGuard& stream = *guard;
  {
    capnp::TwoPartyVatNetwork network(stream, capnp::rpc::twoparty::Side::SERVER);
    auto rpc = capnp::makeRpcServer(network,
                                    tracker::NewGateway(*t->gateway, "10.0.0.7", timer, [&stream] {
                                      stream.set_message_limit_bytes(kAuthenticatedMessageBytes);
                                    }));
    kj::byte sink[4096];
    auto drained =
        Drain(*client, sink, sizeof(sink)).catch_([](kj::Exception&&) {}).eagerlyEvaluate(nullptr);
    auto sent = client->write(data, size)
                    .then([&client] { client->shutdownWrite(); })
                    .catch_([](kj::Exception&&) {})
                    .eagerlyEvaluate(nullptr);
    // Served once the server has read to the end (or refused a frame); the
    // delay only bounds an input that keeps the connection busy.
    network.onDisconnect()
        .exclusiveJoin(stream.onRefused().ignoreResult())
        .exclusiveJoin(timer.afterDelay(2 * kj::SECONDS))
        .wait(t->io.waitScope);
  }
  t->io.waitScope.poll();
  return 0;
}
