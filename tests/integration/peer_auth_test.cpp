// Peer admission by proof (`shoal-tracker serve --peer-security auth`): a
// real tracker and real agents on 127.0.0.1 whose torrents are plain
// BitTorrent, where every peer must prove in the extension handshake that it
// holds a certificate from the cluster's peer CA before any piece moves.
//   - members: agents pull a multi-file version from each other, whole and
//     byte-identical, all of it from peers;
//   - outsiders: a stock client that speaks no proof, and a hand-written one
//     (auth_outsider_peer.py) proving with a certificate of another CA, an
//     expired one, the cluster's certificate without its key, or the SSL
//     torrent of a `tls` cluster, get no byte; the same client proving with
//     a certificate the cluster's CA signed gets the whole file, so the
//     harness sees bytes when there are any;
//   - replay: a proof an agent sent on one connection, replayed on another
//     (to it or to another agent) or reflected back on its own, gets no byte.
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

ClusterOptions AuthCluster() {
  ClusterOptions o;
  o.tracker_flags = {"--announce-interval", "1s", "--peer-security", "auth"};
  return o;
}

// A certificate `issuer` signed, valid from `now_ms` for `ttl_ms`, written
// as `prefix`.pem with a key as `prefix`.key: the certificate's own, or a
// different one when `own_key` is false.
std::vector<std::string> WriteIdentity(const PeerCa& issuer, const std::string& prefix,
                                       int64_t now_ms, int64_t ttl_ms, bool own_key = true) {
  auto key = GeneratePeerKey();
  auto other = GeneratePeerKey();
  REQUIRE(key.ok());
  REQUIRE(other.ok());
  auto cert = issuer.Issue(key->public_key_pem, "outsider", now_ms, ttl_ms);
  REQUIRE(cert.ok());
  std::ofstream(prefix + ".pem") << cert->cert_pem;
  std::ofstream(prefix + ".key") << (own_key ? key : other)->private_key_pem;
  return {prefix + ".pem", prefix + ".key"};
}

struct Outcome {
  double downloaded = -1;
  bool done = false;
  std::string json;
};

// Runs auth_outsider_peer.py in `mode` against `port` for up to `seconds`.
Outcome RunClient(const std::string& torrent, int port, int seconds, const std::string& mode,
                  const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {
      "/usr/bin/python3",   SHOAL_AUTH_OUTSIDER_PEER, torrent, "127.0.0.1",
      std::to_string(port), std::to_string(seconds),  mode};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = RunProcess(argv);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  Outcome o;
  o.json = r.out;
  size_t at = r.out.find("\"downloaded\": ");
  if (at != std::string::npos) o.downloaded = std::stod(r.out.substr(at + 14));
  o.done = r.out.find("\"done\": true") != std::string::npos;
  return o;
}

// The stock client (outsider_peer.py): plain BitTorrent, no proof.
double RunStockClient(const std::string& torrent, int port, int seconds) {
  ProcessResult r = RunProcess({"/usr/bin/python3", SHOAL_OUTSIDER_PEER, torrent, "127.0.0.1",
                                std::to_string(port), std::to_string(seconds)});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  size_t at = r.out.find("\"downloaded\": ");
  REQUIRE(at != std::string::npos);
  return std::stod(r.out.substr(at + 14));
}

std::string AuthRefused(const std::string& reason) {
  return "shoal_agent_peer_auth_refused_total{reason=\"" + reason + "\"}";
}

const char kBytesOut[] = "shoal_agent_peer_bytes_total{direction=\"out\"}";

}  // namespace

TEST_CASE("in auth mode agents prove membership and move a version whole over plain BitTorrent",
          "[agent][peers][auth]") {
  TestCluster c(AuthCluster());
  AgentProcess& seeder = c.AddAgent();
  AgentProcess& leecher = c.AddAgent();
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/shard-0.safetensors", 5 << 20, 41);
  WriteRandomFile(ckpt + "/shard-1.safetensors", (3 << 20) + 4321, 42);
  WriteRandomFile(ckpt + "/config.json", 2000, 43);
  c.PublishOk(ckpt, "team-a/m", 0);
  CHECK(seeder.Metric("shoal_agent_peer_auth") == 1);
  CHECK(seeder.Metric("shoal_agent_peer_tls") == 0);

  ProcessResult pull = RunProcess({CliBinary(), "pull", "team-a/m:latest", "--to", c.tmp / "out",
                                   "--agent", leecher.socket(), "--json"},
                                  {"SHOAL_TOKEN=" + c.reader});
  INFO(pull.out << pull.err);
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
  const uint64_t total = (5 << 20) + (3 << 20) + 4321 + 2000;
  CHECK_THAT(pull.out, Catch::Contains("\"bytes_from_peers\":" + std::to_string(total)));
  for (AgentProcess* a : {&seeder, &leecher}) {
    CHECK(a->Metric("shoal_agent_peer_auth_admitted_total") >= 1);
    for (const char* r : {"no_proof", "timeout", "bad_certificate", "bad_signature", "malformed"})
      CHECK(a->Metric(AuthRefused(r)) == 0);
  }
}

TEST_CASE("in auth mode an outsider's client gets no byte without a cluster proof",
          "[agent][peers][auth]") {
  TestCluster c(AuthCluster());
  // A short handshake timeout, so that the silent client outlasts it.
  AgentProcess& agent = c.AddAgent({"--peer-handshake-timeout-s", "2"});
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model.bin", 6 << 20, 31);
  c.PublishOk(ckpt, "team-a/m", 0);
  const std::string ca = c.tracker.peer_ca();
  REQUIRE(ca.find("BEGIN CERTIFICATE") != std::string::npos);
  const std::string torrent =
      WriteTorrent(ckpt + "/model.bin", kPiece, "", c.tmp / "model.torrent");
  auto cluster_ca = PeerCa::LoadOrCreate(c.tracker.data_dir());
  REQUIRE(cluster_ca.ok());
  auto foreign_ca = PeerCa::Create("another cluster's CA", NowMs(), 24 * kHour);
  REQUIRE(foreign_ca.ok());
  auto foreign = WriteIdentity(**foreign_ca, c.tmp / "foreign", NowMs(), kHour);
  auto expired = WriteIdentity(**cluster_ca, c.tmp / "expired", NowMs() - 3 * kHour, kHour);
  auto keyless = WriteIdentity(**cluster_ca, c.tmp / "keyless", NowMs(), kHour, false);
  auto member = WriteIdentity(**cluster_ca, c.tmp / "member", NowMs(), kHour);

  const int port = agent.peer_port();
  CHECK(RunStockClient(torrent, port, 5) == 0);
  Outcome silent = RunClient(torrent, port, 6, "silent");
  Outcome stranger = RunClient(torrent, port, 5, "prove", foreign);
  Outcome lapsed = RunClient(torrent, port, 5, "prove", expired);
  Outcome stolen = RunClient(torrent, port, 5, "prove", keyless);
  // A `tls` cluster's torrent of the same file names another info-hash.
  Outcome ssl = RunClient(WriteTorrent(ckpt + "/model.bin", kPiece, ca, c.tmp / "ssl.torrent"),
                          port, 5, "prove", member);
  for (const Outcome* o : {&silent, &stranger, &lapsed, &stolen, &ssl}) {
    INFO(o->json);
    CHECK(o->downloaded == 0);
    CHECK_FALSE(o->done);
  }
  CHECK(agent.Metric(AuthRefused("no_proof")) >= 1);  // the stock client
  CHECK(agent.Metric(AuthRefused("timeout")) >= 1);   // silent
  CHECK(agent.Metric(AuthRefused("bad_certificate")) >= 2);
  CHECK(agent.Metric(AuthRefused("bad_signature")) >= 1);
  CHECK(agent.Metric(kBytesOut) == 0);

  // The same client with a certificate the cluster's CA signed, and its
  // key, gets every byte: what kept the others out is the proof.
  Outcome in = RunClient(torrent, port, 60, "prove", member);
  INFO(in.json);
  CHECK(in.done);
  CHECK(in.downloaded >= 6 << 20);
}

TEST_CASE("in auth mode a captured membership proof gets no byte when replayed",
          "[agent][peers][auth]") {
  TestCluster c(AuthCluster());
  AgentProcess& first = c.AddAgent();
  AgentProcess& second = c.AddAgent();
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model.bin", 6 << 20, 33);
  c.PublishOk(ckpt, "team-a/m", 0);
  // The second agent holds the file too.
  ProcessResult pull = RunProcess(
      {CliBinary(), "pull", "team-a/m:latest", "--to", c.tmp / "out", "--agent", second.socket()},
      {"SHOAL_TOKEN=" + c.reader});
  REQUIRE(pull.exit_code == 0);
  const std::string torrent =
      WriteTorrent(ckpt + "/model.bin", kPiece, "", c.tmp / "model.torrent");

  // An agent proves itself to anyone who offers a nonce: capture that proof.
  const std::string proof = c.tmp / "proof.bin";
  RunClient(torrent, first.peer_port(), 5, "capture", {proof});
  REQUIRE(std::ifstream(proof).good());
  // The pull came from the first agent; wait for its counters to say so.
  for (int i = 0; i < 50 && first.Metric(kBytesOut) < 6 << 20; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double out_before = first.Metric(kBytesOut);
  REQUIRE(out_before >= 6 << 20);
  Outcome again = RunClient(torrent, first.peer_port(), 5, "replay", {proof});
  Outcome elsewhere = RunClient(torrent, second.peer_port(), 5, "replay", {proof});
  Outcome reflected = RunClient(torrent, first.peer_port(), 5, "reflect");
  for (const Outcome* o : {&again, &elsewhere, &reflected}) {
    INFO(o->json);
    CHECK(o->downloaded == 0);
  }
  CHECK(first.Metric(AuthRefused("bad_signature")) >= 1);
  CHECK(second.Metric(AuthRefused("bad_signature")) >= 1);
  CHECK(first.Metric(AuthRefused("malformed")) >= 1);    // its own nonce echoed
  std::this_thread::sleep_for(std::chrono::seconds(2));  // counters catch up
  CHECK(first.Metric(kBytesOut) == out_before);
}
