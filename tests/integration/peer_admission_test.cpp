// Peer admission in a running cluster (a real tracker and real agents on
// 127.0.0.1, peer TLS on as by default):
//   - outsiders: a stock BitTorrent client (Debian's python3-libtorrent)
//     that knows a published file's torrent, down to the cluster's CA
//     certificate every torrent carries, connects straight to an agent's
//     peer port with no certificate, one from another CA, or an expired
//     one, and gets no byte; with a certificate the cluster's CA signed it
//     gets the whole file, so the harness sees bytes when there are any.
//   - rotation: certificates that last 6 s renew during a pull that takes
//     longer, and an agent whose token lapsed gets no new one.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "integration/outsider_torrent.h"
#include "p2p/torrent_metainfo.h"
#include "shoal/peer_cert.h"
#include "shoal/piece_hasher.h"
#include "shoal/utc_time.h"
#include "support/test_cluster.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

constexpr uint32_t kPiece = 1 << 20;
constexpr int64_t kHour = 3600 * 1000;

struct Identity {
  std::string cert, key;  // PEM files
};

// A key and a certificate `issuer` signed for it, valid from `now_ms` for
// `ttl_ms`, written as `prefix`.pem and `prefix`.key.
Identity WriteIdentity(const PeerCa& issuer, const std::string& prefix, int64_t now_ms,
                       int64_t ttl_ms) {
  auto key = GeneratePeerKey();
  REQUIRE(key.ok());
  auto cert = issuer.Issue(key->public_key_pem, "outsider", now_ms, ttl_ms);
  REQUIRE(cert.ok());
  std::ofstream(prefix + ".pem") << cert->cert_pem;
  std::ofstream(prefix + ".key") << key->private_key_pem;
  return Identity{prefix + ".pem", prefix + ".key"};
}

struct Outcome {
  double downloaded = -1;
  double pieces = -1;
  bool done = false;
  std::string json;
};

double JsonNumber(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stod(json.substr(at + key.size() + 4));
}

// Runs the outsider for up to `seconds` against `port`, with `id` if set.
Outcome RunOutsider(const std::string& torrent, int port, int seconds, const Identity* id) {
  std::vector<std::string> args = {
      "/usr/bin/python3", SHOAL_OUTSIDER_PEER,  torrent,
      "127.0.0.1",        std::to_string(port), std::to_string(seconds)};
  if (id != nullptr) args.insert(args.end(), {id->cert, id->key});
  ProcessResult r = RunProcess(args);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  Outcome o;
  o.json = r.out;
  o.downloaded = JsonNumber(r.out, "downloaded");
  o.pieces = JsonNumber(r.out, "pieces");
  o.done = r.out.find("\"done\": true") != std::string::npos;
  return o;
}

std::string Refused(const std::string& reason) {
  return "shoal_agent_peer_handshakes_refused_total{reason=\"" + reason + "\"}";
}

const char kExpiry[] = "shoal_agent_peer_cert_expiry_timestamp_seconds";

}  // namespace

TEST_CASE("an outsider's BitTorrent client gets no byte from an agent's peer port",
          "[agent][peers]") {
  TestCluster c;
  AgentProcess& agent = c.AddAgent();
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model.bin", 6 << 20, 31);
  c.PublishOk(ckpt, "team-a/m", 0);  // the agent seeds it
  const std::string ca = c.tracker.peer_ca();
  REQUIRE(ca.find("BEGIN CERTIFICATE") != std::string::npos);
  CHECK(agent.Metric("shoal_agent_peer_tls") == 1);
  CHECK(agent.Metric(kExpiry) * 1000 > static_cast<double>(NowMs()));

  const std::string torrent =
      WriteTorrent(ckpt + "/model.bin", kPiece, ca, c.tmp / "model.torrent");
  auto cluster_ca = PeerCa::LoadOrCreate(c.tracker.data_dir());  // as the tracker holds it
  REQUIRE(cluster_ca.ok());
  auto foreign_ca = PeerCa::Create("another cluster's CA", NowMs(), 24 * kHour);
  REQUIRE(foreign_ca.ok());
  Identity foreign = WriteIdentity(**foreign_ca, c.tmp / "foreign", NowMs(), kHour);
  Identity expired = WriteIdentity(**cluster_ca, c.tmp / "expired", NowMs() - 3 * kHour, kHour);
  Identity member = WriteIdentity(**cluster_ca, c.tmp / "member", NowMs(), kHour);

  const int port = agent.peer_port();
  Outcome none = RunOutsider(torrent, port, 5, nullptr);
  Outcome stranger = RunOutsider(torrent, port, 5, &foreign);
  Outcome lapsed = RunOutsider(torrent, port, 5, &expired);
  // A client that ignores the CA builds the torrent agents served before
  // peer TLS: plain BitTorrent on the TLS port.
  Outcome plain = RunOutsider(
      WriteTorrent(ckpt + "/model.bin", kPiece, "", c.tmp / "plain.torrent"), port, 5, nullptr);
  for (const Outcome* o : {&none, &stranger, &lapsed, &plain}) {
    INFO(o->json);
    CHECK(o->downloaded == 0);
    CHECK(o->pieces == 0);
    CHECK_FALSE(o->done);
  }
  CHECK(agent.Metric(Refused("no_certificate")) >= 1);
  CHECK(agent.Metric(Refused("bad_certificate")) >= 2);
  CHECK(agent.Metric(Refused("not_tls")) >= 1);
  CHECK(agent.Metric("shoal_agent_peer_bytes_total{direction=\"out\"}") == 0);

  // The same client with a certificate the cluster's CA signed gets every
  // byte: what kept the others out is the certificate, nothing else.
  Outcome in = RunOutsider(torrent, port, 60, &member);
  INFO(in.json);
  CHECK(in.done);
  CHECK(in.downloaded >= 6 << 20);
}

TEST_CASE("peer certificates renew during a pull, and an agent whose token lapsed gets none",
          "[agent][peers]") {
  ClusterOptions o;
  o.tracker_flags = {"--announce-interval", "1s", "--peer-cert-ttl", "6s"};
  TestCluster c(o);
  // 20 MiB at 2 MiB/s: the pull outlasts the certificates it starts with.
  AgentProcess& seeder = c.AddAgent({"--peer-upload-rate", "2MiB"});
  AgentProcess& leecher = c.AddAgent();
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model.bin", 20 << 20, 32);
  c.PublishOk(ckpt, "team-a/m", 0);
  const double first = seeder.Metric(kExpiry);
  REQUIRE(first > 0);

  auto start = std::chrono::steady_clock::now();
  ProcessResult pull = RunProcess({CliBinary(), "pull", "team-a/m:latest", "--to", c.tmp / "out",
                                   "--agent", leecher.socket(), "--json"},
                                  {"SHOAL_TOKEN=" + c.reader});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(pull.out << pull.err);
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
  CHECK(seconds > 7);  // longer than the first certificates lasted
  CHECK(seeder.Metric(kExpiry) > first + 3);
  CHECK(leecher.Metric(kExpiry) > first + 3);
  CHECK_THAT(pull.out, Catch::Contains("\"bytes_from_peers\":20971520"));

  // An agent with a token that lapses after 8 s: renewals are granted
  // until then and refused after (and retried every 10 s), so its
  // certificate stops moving and expires.
  const std::string short_token = c.tracker.MintToken("*", "read", "short-lived", "8s");
  AgentProcess lapsing(
      c.tmp / "agents", "lapsing",
      {"--tracker", c.tracker.rpc_address(), "--token", short_token, "--cache-size", "64MiB"});
  lapsing.Start();
  REQUIRE(lapsing.Metric(kExpiry) > 0);
  std::this_thread::sleep_for(std::chrono::seconds(12));
  const double settled = lapsing.Metric(kExpiry);
  std::this_thread::sleep_for(std::chrono::seconds(11));  // one more refused renewal
  CHECK(lapsing.Metric(kExpiry) == settled);
  CHECK(settled * 1000 < static_cast<double>(NowMs()));  // expired
  CHECK_THAT(lapsing.log(), Catch::Contains("peer.cert_renew_failed"));
  CHECK(c.Curl({"-s", "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) + "/metrics"})
            .body.find("shoal_tracker_peer_certs_total{result=\"refused\"}") != std::string::npos);
}
