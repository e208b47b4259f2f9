// TLS on the control links: a tracker serving its RPC and HTTP with a
// certificate from a test CA, agents and the CLI trusting only that CA,
// agents serving reads over HTTPS, and clients that trust another CA,
// expect another name, or speak plain text refused with one clear line.
// Certificates are made with the openssl command.
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "integration/pull_cluster.h"
#include "integration/raw_clients.h"

using namespace shoal::testing;

namespace {

// A CA and a server certificate it signs, for `names` (subjectAltName
// entries such as "DNS:localhost"), in `dir`.
struct TestPki {
  std::string ca, cert, key;
};

void Openssl(std::vector<std::string> args) {
  args.insert(args.begin(), "/usr/bin/openssl");
  ProcessResult r = RunProcess(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

TestPki MakePki(const std::string& dir, const std::string& names) {
  TestPki p{dir + "/ca.pem", dir + "/server.pem", dir + "/server.key"};
  std::filesystem::create_directories(dir);
  Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-keyout", dir + "/ca.key", "-out", p.ca, "-days", "2", "-subj", "/CN=shoal test CA"});
  Openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
           p.key, "-out", dir + "/server.csr", "-subj", "/CN=shoal-tracker"});
  {
    std::ofstream ext(dir + "/ext.cnf");
    ext << "subjectAltName=" << names << "\n";
  }
  Openssl({"x509", "-req", "-in", dir + "/server.csr", "-CA", p.ca, "-CAkey", dir + "/ca.key",
           "-CAcreateserial", "-out", p.cert, "-days", "2", "-extfile", dir + "/ext.cnf"});
  ::chmod(p.key.c_str(), 0600);
  return p;
}

// A pull cluster whose tracker serves TLS with `pki`, whose agents and CLI
// trust its CA and expect the name "localhost", and whose agents also
// serve reads over HTTPS with the same certificate.
struct TlsCluster : TempDir, TestPki, TestCluster {
  explicit TlsCluster(int agents, std::vector<std::string> tracker_flags = {},
                      std::vector<std::string> agent_flags = {})
      : TestPki(MakePki(static_cast<TempDir&>(*this) / "pki", "DNS:localhost,IP:127.0.0.1")),
        TestCluster(Options(agents, *this, std::move(tracker_flags), std::move(agent_flags))) {
    tracker.set_https_ca(ca);
  }

  static ClusterOptions Options(int agents, const TestPki& pki,
                                std::vector<std::string> tracker_flags,
                                std::vector<std::string> agent_flags) {
    tracker_flags.insert(tracker_flags.end(), {"--tls-cert", pki.cert, "--tls-key", pki.key});
    agent_flags.insert(agent_flags.end(), {"--tracker-ca", pki.ca, "--tracker-server-name",
                                           "localhost", "--https-listen", "127.0.0.1:0",
                                           "--https-cert", pki.cert, "--https-key", pki.key});
    ClusterOptions o = PullCluster::Options(agents, "1GiB", tracker_flags, agent_flags);
    o.cli_env = {"SHOAL_TRACKER_CA=" + pki.ca, "SHOAL_TRACKER_SERVER_NAME=localhost"};
    return o;
  }
};

}  // namespace

TEST_CASE("with TLS on every control link, a publish, pulls and reads work and nothing is plain",
          "[control-tls]") {
  TlsCluster c(3);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 7);
  c.PublishOk(ckpt, "team-a/m", 0);
  std::vector<pid_t> pulls;
  for (int i = 1; i <= 2; ++i)
    pulls.push_back(c.StartPull(i, "team-a/m:latest", c.tmp / ("out" + std::to_string(i))));
  for (size_t i = 0; i < pulls.size(); ++i) {
    INFO(Slurp(c.tmp / ("out" + std::to_string(i + 1)) + ".log"));
    REQUIRE(WaitProcess(pulls[i]) == 0);
  }
  for (int i = 1; i <= 2; ++i) CHECK(SameTree(ckpt, c.tmp / ("out" + std::to_string(i))));
  // The agents found each other through swarm changes batched over their
  // TLS sessions.
  CHECK(c.tracker.Metric("shoal_tracker_announce_batches_total") > 0);

  // A read over the agent's HTTPS endpoint, as a pod on another node would.
  const std::string path = "/v1/models/team-a/m:latest/files/model-00002.safetensors";
  const std::string https = "https://localhost:" + std::to_string(c.agents[2]->https_port()) + path;
  const std::string shard = Slurp(ckpt + "/model-00002.safetensors");
  CurlAnswer read = c.Curl({"--cacert", c.ca, "-H", "Authorization: Bearer " + c.reader, https});
  CHECK(read.status == 200);
  CHECK(read.body == shard);
  CurlAnswer range = c.Curl(
      {"--cacert", c.ca, "-H", "Authorization: Bearer " + c.reader, "-r", "1000-1999", https});
  CHECK(range.status == 206);
  CHECK(range.body == shard.substr(1000, 1000));
  // The loopback endpoint stays plain.
  CHECK(c.Curl({"-H", "Authorization: Bearer " + c.reader, c.FileUrl(2, "m", "config.json")})
            .status == 200);

  // The tracker's HTTP is TLS only: /v1 over HTTPS works, plain text does not.
  const std::string v1 =
      "localhost:" + std::to_string(c.tracker.http_port()) + "/v1/models?ns=team-a";
  CurlAnswer listed =
      c.Curl({"--cacert", c.ca, "-H", "Authorization: Bearer " + c.reader, "https://" + v1});
  CHECK(listed.status == 200);
  CHECK_THAT(listed.body, Catch::Contains("\"m\""));
  CHECK(c.Curl({"-H", "Authorization: Bearer " + c.reader, "http://" + v1}).status != 200);

  // Token administration reaches the tracker over HTTPS too.
  std::string admin = c.tracker.MintToken("*", "admin", "ops");
  auto listed_tokens = RunProcess({TrackerBinary(), "token", "list", "--tracker",
                                   "https://localhost:" + std::to_string(c.tracker.http_port()),
                                   "--tracker-ca", c.ca, "--token", admin});
  INFO(listed_tokens.err);
  CHECK(listed_tokens.exit_code == 0);
  CHECK_THAT(listed_tokens.out, Catch::Contains("ops"));
  CHECK(c.tracker.Metric("shoal_tracker_rpc_connections_refused_total{reason=\"tls_handshake\"}") ==
        0);
}

TEST_CASE("a client that does not trust the tracker's certificate is refused with one clear line",
          "[control-tls]") {
  TlsCluster c(0);
  TestPki other = MakePki(c.tmp / "other-pki", "DNS:localhost,IP:127.0.0.1");

  SECTION("another CA") {
    auto r = c.Shoal(c.reader, {"ls", "team-a", "--tracker-ca", other.ca});
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Catch::Contains("TLS handshake failed") &&
                          Catch::Contains("not signed by a CA in " + other.ca));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  SECTION("a name the certificate does not carry") {
    auto r = c.Shoal(c.reader, {"ls", "team-a", "--tracker-server-name", "tracker.example"});
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Catch::Contains("does not name 'tracker.example'"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  SECTION("a CA file that holds no certificate") {
    std::ofstream(c.tmp / "empty.pem") << "not a certificate\n";
    auto r = c.Shoal(c.reader, {"ls", "team-a", "--tracker-ca", c.tmp / "empty.pem"});
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err,
               Catch::Contains("--tracker-ca") && Catch::Contains("holds no PEM certificate"));
  }
  SECTION("plain text to the TLS port") {
    auto r = RunProcess({CliBinary(), "ls", "team-a"},
                        {"SHOAL_TRACKER=" + c.tracker.rpc_address(), "SHOAL_TOKEN=" + c.reader});
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Catch::Contains("if it serves TLS, pass --tracker-ca"));
    // The tracker never sees the token: the handshake fails first.
    for (int i = 0; i < 50; ++i) {
      if (c.tracker.Metric(
              "shoal_tracker_rpc_connections_refused_total{reason=\"tls_handshake\"}") >= 1)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK(c.tracker.Metric(
              "shoal_tracker_rpc_connections_refused_total{reason=\"tls_handshake\"}") >= 1);
  }
  SECTION("the trusted CA and name") {
    auto r = c.Shoal(c.reader, {"ls", "team-a"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("HTTPS with another CA") {
    CurlAnswer r =
        c.Curl({"--cacert", other.ca,
                "https://localhost:" + std::to_string(c.tracker.http_port()) + "/healthz"});
    CHECK(r.exit_code == 60);  // curl: the peer's certificate cannot be verified
  }
}

TEST_CASE("a tracker refuses to start with a key that does not match its certificate",
          "[control-tls]") {
  TempDir tmp;
  TestPki a = MakePki(tmp / "a", "DNS:localhost");
  TestPki b = MakePki(tmp / "b", "DNS:localhost");
  auto r = RunProcess({TrackerBinary(), "serve", "--data-dir", tmp / "data", "--origin",
                       "file://" + tmp / "origin", "--rpc-listen", "127.0.0.1:0", "--http-listen",
                       "127.0.0.1:0", "--tls-cert", a.cert, "--tls-key", b.key});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("does not belong to the first certificate in " + a.cert));
}

TEST_CASE("a TLS handshake that stalls is cut at the port's deadline, on every TLS port",
          "[control-tls]") {
  TlsCluster c(1, {"--http-header-timeout", "1s", "--rpc-auth-timeout", "1s"},
               {"--http-header-timeout-ms", "1000"});
  const int ports[] = {c.agents[0]->https_port(), c.tracker.http_port(),
                       std::stoi(c.tracker.rpc_address().substr(10))};
  for (int port : ports) {
    INFO("port " << port);
    // Silent, and a ClientHello that never finishes: both are cut.
    int silent = ConnectFrom("127.0.0.1", port);
    int partial = ConnectFrom("127.0.0.1", port);
    REQUIRE(silent >= 0);
    REQUIRE(partial >= 0);
    const unsigned char hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
    REQUIRE(::send(partial, hello_start, sizeof(hello_start), MSG_NOSIGNAL) ==
            ssize_t(sizeof(hello_start)));
    auto start = std::chrono::steady_clock::now();
    CHECK(ClosedWithin(silent, 4000));
    CHECK(ClosedWithin(partial, 4000));
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(seconds >= 0.5);  // not refused at once: held until the deadline
    ::close(silent);
    ::close(partial);
  }
  // The ports still serve a real client afterwards.
  CHECK(c.Shoal(c.reader, {"ls", "team-a"}).exit_code == 0);
}
