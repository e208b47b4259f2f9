// Peer admission by certificate, engine to engine on loopback: torrents
// carry the cluster's CA, peers speak TLS, and only a certificate that CA
// signed, and that has not expired, gets a byte.
#include <catch2/catch.hpp>

#include "p2p/p2p_test_support.h"
#include "shoal/peer_cert.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace testing {
namespace {

std::unique_ptr<PeerCa> NewCa(const std::string& name) {
  auto ca = PeerCa::Create(name, NowMs(), 24 * kHour);
  REQUIRE(ca.ok());
  return std::move(ca).value();
}

// Waits until `agent` has counted at least `n` refusals for `reason`.
bool WaitRefused(Agent& agent, PeerRefusal reason, uint64_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    if (agent.engine->Stats().refused[static_cast<size_t>(reason)] >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

TEST_CASE("peers with the cluster's certificates exchange pieces over TLS", "[p2p][tls]") {
  auto ca = NewCa("cluster CA");
  TestFile f = MakeFile(41, (2u << 20) + 999, 256 * 1024);
  Agent seeder(AwaitingOptions()), leecher(AwaitingOptions()), plain;
  REQUIRE(seeder.engine->SetPeerIdentity(IdentityFor(*ca, *ca, "seeder")).ok());
  REQUIRE(leecher.engine->SetPeerIdentity(IdentityFor(*ca, *ca, "leecher")).ok());
  seeder.Seed(f);
  FileTorrentId sid = seeder.Add(f);
  FileTorrentId lid = leecher.Add(f);
  CHECK(lid == sid);
  CHECK(plain.Add(f) != sid);  // the CA is part of the info-hash
  CHECK(seeder.engine->Stats().peer_tls);
  CHECK_FALSE(plain.engine->Stats().peer_tls);

  REQUIRE(leecher.engine->ConnectPeer(lid, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(lid));
  CHECK(leecher.Materialized(f) == f.data);
  CHECK(leecher.engine->Stats().hash_failures == 0);
  CHECK(seeder.engine->Stats().cert_not_after_ms > NowMs());
}

TEST_CASE("a peer without a certificate the cluster's CA signed gets no byte", "[p2p][tls]") {
  auto ca = NewCa("cluster CA");
  auto foreign = NewCa("another cluster's CA");
  TestFile f = MakeFile(42, 1u << 20, 256 * 1024);
  Agent seeder(AwaitingOptions()), stranger(AwaitingOptions()), expired(AwaitingOptions());
  Agent plain;
  REQUIRE(seeder.engine->SetPeerIdentity(IdentityFor(*ca, *ca, "seeder")).ok());
  // Both outsiders know the cluster's CA certificate (every torrent
  // carries it) and so build the very torrent the seeder serves; one holds
  // a certificate from another CA, the other one from the cluster's CA that
  // expired an hour ago.
  REQUIRE(stranger.engine->SetPeerIdentity(IdentityFor(*ca, *foreign, "stranger")).ok());
  REQUIRE(expired.engine
              ->SetPeerIdentity(IdentityFor(*ca, *ca, "expired", NowMs() - 3 * kHour, 2 * kHour))
              .ok());
  seeder.Seed(f);
  FileTorrentId id = seeder.Add(f);
  REQUIRE(stranger.Add(f) == id);
  REQUIRE(expired.Add(f) == id);
  FileTorrentId plain_id = plain.Add(f);

  REQUIRE(stranger.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(expired.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(plain.engine->ConnectPeer(plain_id, "127.0.0.1", seeder.port()).ok());

  CHECK(WaitRefused(seeder, PeerRefusal::kBadCertificate, 2));
  CHECK(WaitRefused(seeder, PeerRefusal::kNotTls, 1));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // time enough for a piece, were it let in
  for (Agent* a : {&stranger, &expired}) {
    auto p = a->engine->Progress(id);
    REQUIRE(p.ok());
    CHECK(p->have_pieces == 0);
    CHECK(p->bytes_from_peers == 0);
  }
  CHECK(plain.engine->Progress(plain_id)->have_pieces == 0);
  CHECK(seeder.engine->Stats().bytes_up == 0);
}

TEST_CASE("a renewed certificate is used for new connections, and the CA cannot change",
          "[p2p][tls]") {
  auto ca = NewCa("cluster CA");
  auto other = NewCa("other CA");
  TestFile f = MakeFile(43, 1u << 20, 256 * 1024);
  Agent seeder(AwaitingOptions()), leecher(AwaitingOptions());
  // The seeder's first certificate expires while it runs; the renewal
  // arrives before any peer connects.
  REQUIRE(
      seeder.engine->SetPeerIdentity(IdentityFor(*ca, *ca, "seeder", NowMs() - 2 * kHour, kHour))
          .ok());
  REQUIRE(leecher.engine->SetPeerIdentity(IdentityFor(*ca, *ca, "leecher")).ok());
  seeder.Seed(f);
  FileTorrentId id = seeder.Add(f);
  PeerIdentity renewed = IdentityFor(*ca, *ca, "seeder");
  REQUIRE(seeder.engine->SetPeerIdentity(renewed).ok());
  CHECK(seeder.engine->Stats().cert_not_after_ms == renewed.not_after_ms);

  REQUIRE(leecher.Add(f) == id);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.Materialized(f) == f.data);

  Status changed = seeder.engine->SetPeerIdentity(IdentityFor(*other, *other, "seeder"));
  CHECK(changed.code() == Status::Code::kInvalidArgument);
  CHECK_THAT(changed.ToString(), Catch::Contains("restart"));
  PeerIdentity no_cert;
  no_cert.ca_pem = ca->cert_pem();
  CHECK(seeder.engine->SetPeerIdentity(no_cert).code() == Status::Code::kInvalidArgument);
}

TEST_CASE("an engine awaiting its identity adds no torrent until it has one", "[p2p][tls]") {
  EngineOptions eo = AwaitingOptions();
  eo.add_timeout_ms = 300;
  Agent agent(eo);
  TestFile f = MakeFile(44, 300 * 1024, 256 * 1024);
  auto r = agent.engine->AddFile(f.entry, f.piece_size, "");
  CHECK(r.status().code() == Status::Code::kUnavailable);
  CHECK_THAT(r.status().ToString(), Catch::Contains("registered"));
  const uint16_t port = agent.port();
  // A cluster that trusts its network: plain peers, on the same port.
  REQUIRE(agent.engine->SetPeerIdentity(PeerIdentity{}).ok());
  CHECK(agent.port() == port);
  CHECK(agent.engine->AddFile(f.entry, f.piece_size, "").ok());
  CHECK_FALSE(agent.engine->Stats().peer_tls);
}

}  // namespace testing
}  // namespace shoal
