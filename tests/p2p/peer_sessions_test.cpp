// Several peer sessions per engine (EngineOptions::sessions): torrents are
// spread among them by SessionOf, each session listens on its own port, and
// a version of many files moves byte-identical whichever session carries
// each file, in plain BitTorrent, over TLS and with membership proofs.
#include <catch2/catch.hpp>
#include <set>

#include "p2p/p2p_test_support.h"
#include "shoal/peer_cert.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace testing {
namespace {

EngineOptions Sessions(int n, bool await_identity) {
  EngineOptions eo;
  eo.sessions = n;
  eo.await_peer_identity = await_identity;
  return eo;
}

// Files whose torrents land in every one of `n` sessions, `per_session` in
// each (the torrent ID depends on the bytes, so draw until they do). The
// probe adds each file it keeps, to download it.
std::vector<TestFile> FilesInEverySession(Agent& probe, uint16_t n, size_t per_session) {
  std::vector<TestFile> files;
  std::vector<size_t> count(n, 0);
  for (uint64_t seed = 500; files.size() < per_session * n && seed < 700; ++seed) {
    TestFile f = MakeFile(seed, (1u << 20) + seed * 37, 256 * 1024,
                          "shard-" + std::to_string(seed) + ".safetensors");
    auto id = probe.engine->AddFile(f.entry, f.piece_size, "");
    REQUIRE(id.ok());
    uint16_t k = SessionOf(*id, n);
    if (count[k] >= per_session) {
      REQUIRE(probe.engine->Remove(*id).ok());
      continue;
    }
    ++count[k];
    files.push_back(std::move(f));
  }
  return files;
}

// The seeder seeds every file, the leecher downloads them all from it,
// connecting each torrent to the port the seeder's engine names for it.
void MoveAll(Agent& seeder, Agent& leecher, const std::vector<TestFile>& files) {
  std::vector<FileTorrentId> ids;
  for (const TestFile& f : files) {
    seeder.Seed(f);
    FileTorrentId id = seeder.Add(f);
    REQUIRE(leecher.Add(f) == id);
    REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.engine->listen_port(id)).ok());
    ids.push_back(id);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    REQUIRE(leecher.WaitComplete(ids[i]));
    CHECK(leecher.Materialized(files[i]) == files[i].data);
  }
  CHECK(leecher.engine->Stats().hash_failures == 0);
}

std::unique_ptr<PeerCa> NewCa() {
  auto ca = PeerCa::Create("cluster CA", NowMs(), 24 * kHour);
  REQUIRE(ca.ok());
  return std::move(ca).value();
}

}  // namespace

TEST_CASE("torrents spread over the sessions, which listen on consecutive ports", "[p2p]") {
  Agent a(Sessions(3, false));
  REQUIRE(a.engine->sessions() == 3);
  std::vector<TestFile> files = FilesInEverySession(a, 3, 1);
  REQUIRE(files.size() == 3);
  std::set<uint16_t> ports;
  for (const TestFile& f : files) {
    auto id = a.engine->AddFile(f.entry, f.piece_size, "");
    REQUIRE(id.ok());
    uint16_t port = a.engine->listen_port(*id);
    CHECK(port == a.port() + SessionOf(*id, 3));
    ports.insert(port);
  }
  CHECK(ports.size() == 3);
  EngineStats s = a.engine->Stats();
  REQUIRE(s.sessions.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(s.sessions[k].port == a.port() + k);
    CHECK(s.sessions[k].torrents == 1);
  }
  CHECK(s.torrents == 3);
}

TEST_CASE("a port taken after the first fails a fixed listen address with one error", "[p2p]") {
  Agent first(Sessions(1, false));
  const uint16_t taken = first.port();
  EngineOptions eo = Sessions(2, false);
  eo.listen = "127.0.0.1:" + std::to_string(taken - 1);
  P2pTempDir dir;
  StoreOptions so;
  so.dir = dir.path() + "/cache";
  so.capacity_bytes = 1 << 20;
  auto store = ChunkStore::Open(so);
  REQUIRE(store.ok());
  auto e = TorrentEngine::Start(eo, **store);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().code() == Status::Code::kUnavailable);
  CHECK_THAT(e.status().message(), Catch::Contains("and the port after it"));
}

TEST_CASE("two sessions on each side move many files byte-identical", "[p2p]") {
  Agent seeder(Sessions(2, false)), leecher(Sessions(2, false));
  std::vector<TestFile> files = FilesInEverySession(leecher, 2, 2);
  REQUIRE(files.size() == 4);
  MoveAll(seeder, leecher, files);
  REQUIRE(leecher.engine->Stats().sessions.size() == 2);
  // Both sessions carried payload: each holds two of the files (the
  // counters are sampled twice a second).
  CHECK(Eventually([&] {
    EngineStats s = leecher.engine->Stats();
    return s.sessions[0].bytes_down > 0 && s.sessions[1].bytes_down > 0;
  }));
}

TEST_CASE("two sessions move many files over TLS, and refuse an outsider on each port",
          "[p2p][tls]") {
  auto ca = NewCa();
  auto foreign = PeerCa::Create("another CA", NowMs(), 24 * kHour);
  REQUIRE(foreign.ok());
  Agent seeder(Sessions(2, true)), leecher(Sessions(2, true)), stranger(Sessions(1, true));
  REQUIRE(seeder.engine->SetPeerIdentity(IdentityFor(*ca, *ca, "seeder")).ok());
  REQUIRE(leecher.engine->SetPeerIdentity(IdentityFor(*ca, *ca, "leecher")).ok());
  REQUIRE(stranger.engine->SetPeerIdentity(IdentityFor(*ca, **foreign, "stranger")).ok());
  CHECK(seeder.engine->Stats().peer_tls);
  std::vector<TestFile> files = FilesInEverySession(leecher, 2, 2);
  REQUIRE(files.size() == 4);
  MoveAll(seeder, leecher, files);

  // An outsider that builds the same torrents is refused on both ports.
  std::vector<FileTorrentId> ids;
  for (const TestFile& f : files) {
    FileTorrentId id = stranger.Add(f);
    REQUIRE(stranger.engine->ConnectPeer(id, "127.0.0.1", seeder.engine->listen_port(id)).ok());
  }
  auto bad = static_cast<size_t>(PeerRefusal::kBadCertificate);
  CHECK(Eventually([&] { return seeder.engine->Stats().refused[bad] >= 2; },
                   std::chrono::seconds(15)));
  CHECK(stranger.engine->Stats().bytes_down == 0);
}

TEST_CASE("two sessions move many files with membership proofs, and refuse an outsider",
          "[p2p][auth]") {
  auto ca = NewCa();
  auto foreign = PeerCa::Create("another CA", NowMs(), 24 * kHour);
  REQUIRE(foreign.ok());
  auto auth = [](PeerIdentity id) {
    id.auth_only = true;
    return id;
  };
  Agent seeder(Sessions(2, true)), leecher(Sessions(2, true)), stranger(Sessions(1, true));
  REQUIRE(seeder.engine->SetPeerIdentity(auth(IdentityFor(*ca, *ca, "seeder"))).ok());
  REQUIRE(leecher.engine->SetPeerIdentity(auth(IdentityFor(*ca, *ca, "leecher"))).ok());
  REQUIRE(stranger.engine->SetPeerIdentity(auth(IdentityFor(*ca, **foreign, "stranger"))).ok());
  CHECK(seeder.engine->Stats().peer_auth);
  std::vector<TestFile> files = FilesInEverySession(leecher, 2, 2);
  REQUIRE(files.size() == 4);
  MoveAll(seeder, leecher, files);
  CHECK(seeder.engine->Stats().peers_admitted >= 2);

  for (const TestFile& f : files) {
    FileTorrentId id = stranger.Add(f);
    REQUIRE(stranger.engine->ConnectPeer(id, "127.0.0.1", seeder.engine->listen_port(id)).ok());
  }
  auto bad = static_cast<size_t>(PeerAuthRefusal::kBadCertificate);
  CHECK(Eventually([&] { return seeder.engine->Stats().auth_refused[bad] >= 2; },
                   std::chrono::seconds(15)));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  CHECK(stranger.engine->Stats().bytes_down == 0);
}

}  // namespace testing
}  // namespace shoal
