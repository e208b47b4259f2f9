// Engines stopped in the middle of TLS transfers stop promptly: every
// connection's close (close_notify from the patched libtorrent's own record
// path, see deploy/libtorrent/patches/05-tls-bulk-records.patch) ends, on
// both ends, whatever the other end is doing, as when every agent of a node
// pool gets SIGTERM at once.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <future>

#include "p2p/p2p_test_support.h"
#include "shoal/peer_cert.h"
#include "shoal/utc_time.h"
#include "support/handshake_probe.h"

namespace shoal {
namespace testing {
namespace {

// Waits for a Stop() running in `stop`; a Stop that hangs ends the test
// binary (a std::async future cannot be abandoned), loudly.
void WaitStopped(std::future<void>& stop) {
  if (stop.wait_for(std::chrono::seconds(20)) == std::future_status::ready) return;
  std::fprintf(stderr, "peer_tls_stop_test: an engine's Stop() hung for 20 s\n");
  std::abort();
}

}  // namespace

TEST_CASE("engines stopped mid-transfer over TLS stop within seconds", "[p2p][tls]") {
  auto ca = PeerCa::Create("cluster CA", NowMs(), 24 * kHour);
  REQUIRE(ca.ok());
  TestFile f = MakeFile(47, 48u << 20, 1u << 20);
  for (int round = 0; round < 6; ++round) {
    INFO("round " << round);
    EngineOptions seeding = AwaitingOptions();
    seeding.upload_rate = 24u << 20;  // about two seconds for the file
    auto seeder = std::make_unique<Agent>(seeding);
    auto first = std::make_unique<Agent>(AwaitingOptions());
    auto second = std::make_unique<Agent>(AwaitingOptions());
    REQUIRE(seeder->engine->SetPeerIdentity(IdentityFor(**ca, **ca, "seeder")).ok());
    REQUIRE(first->engine->SetPeerIdentity(IdentityFor(**ca, **ca, "first")).ok());
    REQUIRE(second->engine->SetPeerIdentity(IdentityFor(**ca, **ca, "second")).ok());
    seeder->Seed(f);
    FileTorrentId id = seeder->Add(f);
    REQUIRE(first->Add(f) == id);
    REQUIRE(second->Add(f) == id);
    REQUIRE(first->engine->ConnectPeer(id, "127.0.0.1", seeder->port()).ok());
    REQUIRE(second->engine->ConnectPeer(id, "127.0.0.1", seeder->port()).ok());
    REQUIRE(second->engine->ConnectPeer(id, "127.0.0.1", first->port()).ok());
    // Mid-transfer: both leechers have some pieces, neither has all.
    REQUIRE(Eventually([&] {
      auto a = first->engine->Progress(id);
      auto b = second->engine->Progress(id);
      return a.ok() && b.ok() && a->have_pieces > 2 && b->have_pieces > 2;
    }));
    CHECK_FALSE(first->engine->Progress(id)->complete);
    // Rounds alternate: all at once (a node pool's SIGTERM), or one by one
    // with the seeder or a leecher first.
    std::vector<Agent*> order = {seeder.get(), first.get(), second.get()};
    if (round % 3 == 1) std::swap(order[0], order[1]);
    auto started = std::chrono::steady_clock::now();
    if (round % 3 == 0) {
      std::vector<std::future<void>> stops;
      for (Agent* a : order)
        stops.push_back(std::async(std::launch::async, [a] { a->engine->Stop(); }));
      for (auto& s : stops) WaitStopped(s);
    } else {
      for (Agent* a : order) {
        auto one = std::async(std::launch::async, [a] { a->engine->Stop(); });
        WaitStopped(one);
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(seconds < 10);
  }
}

TEST_CASE("an engine stopped while incoming TLS handshakes are under way stops within seconds",
          "[p2p][tls]") {
  // Each stop leaves handshakes half done: connections that sent nothing,
  // and ones that sent the start of a ClientHello record and wait for the
  // rest. The engine's stop closes them while their reads are pending; what
  // those reads complete into must outlive them (see
  // deploy/libtorrent/patches/06-tls-handshakes-at-abort.patch).
  auto ca = PeerCa::Create("cluster CA", NowMs(), 24 * kHour);
  REQUIRE(ca.ok());
  const std::string hello_start("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  // Fewer under valgrind (p2p-valgrind:), where each round is slow.
  const char* rounds_env = std::getenv("SHOAL_STOP_ROUNDS");
  const int rounds = rounds_env != nullptr ? std::atoi(rounds_env) : 8;
  for (int round = 0; round < rounds; ++round) {
    INFO("round " << round);
    auto agent = std::make_unique<Agent>(AwaitingOptions());
    REQUIRE(agent->engine->SetPeerIdentity(IdentityFor(**ca, **ca, "agent")).ok());
    REQUIRE(Eventually([&] { return agent->port() != 0; }));
    std::vector<int> fds;
    for (int i = 0; i < 24; ++i) {
      fds.push_back(Connect(agent->port()));
      if (i % 2 == 1)
        REQUIRE(::send(fds.back(), hello_start.data(), hello_start.size(), MSG_NOSIGNAL) > 0);
    }
    // Accepted, and each handshake's read pending.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto started = std::chrono::steady_clock::now();
    auto stop = std::async(std::launch::async, [&] { agent->engine->Stop(); });
    WaitStopped(stop);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(seconds < 10);
    for (int fd : fds) ::close(fd);
  }
}

}  // namespace testing
}  // namespace shoal
