// Revoking tokens on a real cluster: shoal-tracker, shoald, the shoal CLI
// and curl on 127.0.0.1. A revoked token is refused at once by the tracker
// (RPC, /v1 and /announce), within one heartbeat by an agent's read
// endpoint, and still after a restart; the audit log names who revoked, and
// `token list` never prints a token's MAC. Missing or dead tokens get 401,
// tokens without the right 403.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "shoal/token.h"
#include "support/announced_hash.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kHeartbeatMs = 2000;  // the tracker's default (tracker_options.h)

std::string IdOf(const std::string& token) { return shoal::PeekTokenClaims(token)->id; }

std::string HttpBase(const TestCluster& c) {
  return "http://127.0.0.1:" + std::to_string(c.tracker.http_port());
}

// `shoal-tracker token ARGS...`
ProcessResult TokenCommand(std::vector<std::string> args) {
  args.insert(args.begin(), {TrackerBinary(), "token"});
  return RunProcess(args);
}

// The same, through the running tracker's API with `admin`.
ProcessResult ViaTracker(const TestCluster& c, const std::string& admin,
                         std::vector<std::string> args) {
  args.insert(args.end(), {"--tracker", HttpBase(c), "--token", admin});
  return TokenCommand(std::move(args));
}

// A published one-file model in team-a, and the info-hash its file is
// announced under.
std::string PublishAnnounced(TestCluster& c) {
  const std::string dir = c.tmp / "announced";
  WriteRandomFile(dir + "/w.bin", 50000, 17);
  ProcessResult pub = c.Shoal(c.writer, {"publish", dir, "--name", "team-a/announced",
                                         "--piece-size", "16384", "--no-seed"});
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);
  return AnnouncedHash(dir + "/w.bin", 16384, c.tracker.peer_ca());
}

// What a holder of `token` gets from each of the tracker's doors.
struct Doors {
  ProcessResult rpc;     // `shoal ls team-a`, over Cap'n Proto
  CurlAnswer http;       // GET /v1/models?ns=team-a
  std::string announce;  // GET /announce, bencoded
};

Doors Knock(const TestCluster& c, const std::string& token, const std::string& info_hash) {
  Doors d;
  d.rpc = c.Shoal(token, {"ls", "team-a"});
  d.http = c.Curl({"-H", "Authorization: Bearer " + token, HttpBase(c) + "/v1/models?ns=team-a"});
  d.announce = RunProcess({"/usr/bin/curl", "-s", "--max-time", "5",
                           HttpBase(c) + "/announce?token=" + PercentEncode(token) +
                               "&info_hash=" + PercentEncode(info_hash) +
                               "&peer_id=" + std::string(20, 'p') + "&port=6881&left=0"})
                   .out;
  return d;
}

void CheckOpen(const Doors& d) {
  INFO(d.rpc.err << d.http.body << d.announce);
  CHECK(d.rpc.exit_code == 0);
  CHECK(d.http.status == 200);
  CHECK(d.announce.find("failure reason") == std::string::npos);
  CHECK(d.announce.find("8:intervali") != std::string::npos);
}

// Refused as revoked at every door: the CLI in one line, /v1 with 401 and
// a Bearer challenge, /announce with a bencoded failure.
void CheckRevoked(const Doors& d) {
  INFO(d.rpc.err << d.http.body << d.announce);
  CHECK(d.rpc.exit_code != 0);
  CHECK(d.rpc.err.rfind("shoal: error: unauthenticated: token ", 0) == 0);
  CHECK(d.rpc.err.find("was revoked at") != std::string::npos);
  CHECK(std::count(d.rpc.err.begin(), d.rpc.err.end(), '\n') == 1);
  CHECK(d.http.status == 401);
  CHECK(d.http.headers.count("www-authenticate") == 1);
  CHECK(d.http.body.find("was revoked at") != std::string::npos);
  CHECK(d.announce.find("failure reason") != std::string::npos);
  CHECK(d.announce.find("was revoked at") != std::string::npos);
}

}  // namespace

TEST_CASE(
    "revoking by id or subject through the running tracker refuses RPC, /v1 and announce "
    "at once, and later tokens of the subject still work",
    "[tracker][token][revocation]") {
  TestCluster c;
  const std::string info_hash = PublishAnnounced(c);
  const std::string admin = c.tracker.MintToken("*", "admin", "alice");
  const std::string pod1 = c.tracker.MintToken("team-a", "read", "pod-1");
  const std::string pod2a = c.tracker.MintToken("team-a", "read", "pod-2");
  const std::string pod2b = c.tracker.MintToken("team-a", "read", "pod-2");
  for (const std::string& t : {pod1, pod2a, pod2b}) CheckOpen(Knock(c, t, info_hash));

  ProcessResult by_id = ViaTracker(c, admin, {"revoke", "--id", IdOf(pod1)});
  INFO(by_id.err);
  REQUIRE(by_id.exit_code == 0);
  CHECK(by_id.out == "revoked token " + IdOf(pod1) + "\n");
  CheckRevoked(Knock(c, pod1, info_hash));
  CheckOpen(Knock(c, pod2a, info_hash));  // same namespace, other subject

  ProcessResult by_subject = ViaTracker(c, admin, {"revoke", "--subject", "pod-2"});
  INFO(by_subject.err);
  REQUIRE(by_subject.exit_code == 0);
  CHECK(by_subject.out.rfind("revoked every token of 'pod-2' issued up to ", 0) == 0);
  CheckRevoked(Knock(c, pod2a, info_hash));
  CheckRevoked(Knock(c, pod2b, info_hash));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a later millisecond
  const std::string pod2c = c.tracker.MintToken("team-a", "read", "pod-2");
  CheckOpen(Knock(c, pod2c, info_hash));

  // `token list` shows every token's claims and state, and no MAC.
  ProcessResult list = ViaTracker(c, admin, {"list"});
  INFO(list.out << list.err);
  REQUIRE(list.exit_code == 0);
  std::map<std::string, std::string> state;  // id -> its line
  size_t at = list.out.find('\n') + 1;
  while (at < list.out.size()) {
    size_t end = list.out.find('\n', at);
    std::string line = list.out.substr(at, end - at);
    state[line.substr(0, line.find(' '))] = line;
    at = end + 1;
  }
  CHECK_THAT(state[IdOf(pod1)], Catch::Contains("pod-1") && Catch::Contains("revoked ") &&
                                    Catch::EndsWith(" by alice"));
  CHECK_THAT(state[IdOf(pod2a)], Catch::Contains("revoked ") && Catch::EndsWith(" by alice"));
  CHECK_THAT(state[IdOf(pod2b)], Catch::Contains("revoked "));
  CHECK_THAT(state[IdOf(pod2c)], Catch::Contains("team-a") && Catch::EndsWith("active"));
  CHECK_THAT(state[IdOf(admin)], Catch::Contains("admin") && Catch::Contains("*"));
  for (const std::string& t : {admin, pod1, pod2a, pod2b, pod2c, c.reader, c.writer}) {
    const std::string mac = t.substr(t.rfind('.') + 1);
    CHECK(list.out.find(mac) == std::string::npos);
    CHECK(Slurp(c.tracker.data_dir() + "/issued-tokens").find(mac) == std::string::npos);
  }

  // Listing and revoking need an admin token for '*': one clear line each.
  ProcessResult not_admin = ViaTracker(c, pod2c, {"list"});
  CHECK(not_admin.exit_code == 1);
  CHECK(not_admin.err.rfind("shoal-tracker: error: permission denied: list tokens: token for "
                            "'pod-2' may not administer namespace '*'",
                            0) == 0);
  ProcessResult dead_admin = ViaTracker(c, pod1, {"revoke", "--subject", "x"});
  CHECK(dead_admin.exit_code == 1);
  CHECK(dead_admin.err.rfind("shoal-tracker: error: unauthenticated: revoke: token ", 0) == 0);
  ProcessResult neither = TokenCommand({"revoke", "--tracker", HttpBase(c), "--token", admin});
  CHECK(neither.exit_code == 1);
  CHECK(neither.err ==
        "shoal-tracker: error: invalid argument: name what to revoke: --id "
        "TOKEN_ID or --subject SUBJECT\n");

  // The audit log says who revoked what.
  CurlAnswer audit = c.Curl({"-H", "Authorization: Bearer " + admin, HttpBase(c) + "/v1/audit"});
  INFO(audit.body);
  CHECK(audit.status == 200);
  CHECK_THAT(audit.body,
             Catch::Contains("\"subject\":\"alice\",\"tokenId\":\"" + IdOf(admin) +
                             "\",\"action\":\"revoke\",\"target\":\"id:" + IdOf(pod1) + "\""));
  CHECK_THAT(audit.body, Catch::Contains("\"action\":\"revoke\",\"target\":\"subject:pod-2\""));
}

TEST_CASE("the tracker answers 401 for a missing or dead token and 403 for a missing right",
          "[tracker][token][http]") {
  TestCluster c;
  const std::string brief = c.tracker.MintToken("team-a", "read", "brief", "1s");
  const std::string outsider = c.tracker.MintToken("team-b", "read", "pod-9");
  const std::string url = HttpBase(c) + "/v1/models?ns=team-a";
  auto get = [&](const std::string& token, const std::string& u) {
    std::vector<std::string> args;
    if (!token.empty()) args = {"-H", "Authorization: Bearer " + token};
    args.push_back(u);
    return c.Curl(args);
  };
  CurlAnswer none = get("", url);
  CHECK(none.status == 401);
  CHECK(none.headers["www-authenticate"].rfind("Bearer", 0) == 0);
  CHECK(get("not-a-token", url).status == 401);
  std::string forged = c.reader.substr(0, c.reader.rfind('.') + 1) + std::string(43, 'A');
  CHECK(get(forged, url).status == 401);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CurlAnswer expired = get(brief, url);
  CHECK(expired.status == 401);
  CHECK_THAT(expired.body, Catch::Contains("expired"));

  CurlAnswer other_ns = get(outsider, url);
  CHECK(other_ns.status == 403);
  CHECK(other_ns.headers.count("www-authenticate") == 0);
  CHECK(get(c.reader, HttpBase(c) + "/v1/audit").status == 403);
  CHECK(get(c.reader, HttpBase(c) + "/v1/tokens").status == 403);
  CHECK(get(c.reader, url).status == 200);
}

TEST_CASE("revocations survive a restart, and a stopped tracker's folder is revoked locally",
          "[tracker][token][revocation]") {
  TestCluster c;
  const std::string admin = c.tracker.MintToken("*", "admin", "alice");
  const std::string online = c.tracker.MintToken("team-a", "read", "pod-online");
  const std::string offline = c.tracker.MintToken("team-a", "read", "pod-offline");
  REQUIRE(ViaTracker(c, admin, {"revoke", "--id", IdOf(online)}).exit_code == 0);

  // While the tracker runs it holds the registry: --data-dir says so and
  // points at --tracker.
  ProcessResult locked =
      TokenCommand({"revoke", "--subject", "pod-offline", "--data-dir", c.tracker.data_dir()});
  CHECK(locked.exit_code == 1);
  CHECK_THAT(locked.err, Catch::Contains("--tracker URL --token ADMIN_TOKEN"));
  CHECK(std::count(locked.err.begin(), locked.err.end(), '\n') == 1);

  c.tracker.Stop();
  ProcessResult local =
      TokenCommand({"revoke", "--subject", "pod-offline", "--data-dir", c.tracker.data_dir()});
  INFO(local.err);
  REQUIRE(local.exit_code == 0);
  ProcessResult list = TokenCommand({"list", "--data-dir", c.tracker.data_dir()});
  INFO(list.out);
  CHECK_THAT(list.out, Catch::Contains(" by alice\n") && Catch::Contains(" by local:"));
  c.tracker.Start();

  for (const std::string& t : {online, offline}) {
    CurlAnswer r =
        c.Curl({"-H", "Authorization: Bearer " + t, HttpBase(c) + "/v1/models?ns=team-a"});
    INFO(r.body);
    CHECK(r.status == 401);
    CHECK_THAT(r.body, Catch::Contains("was revoked at"));
  }
  CurlAnswer audit = c.Curl({"-H", "Authorization: Bearer " + admin, HttpBase(c) + "/v1/audit"});
  CHECK_THAT(audit.body, Catch::Contains("\"subject\":\"local:"));
  CHECK_THAT(audit.body, Catch::Contains("\"target\":\"subject:pod-offline\""));
}

TEST_CASE("an agent's read endpoint refuses a revoked token within one heartbeat",
          "[agent][read][token][revocation]") {
  TestCluster c;
  // A long read cache: the refusal must not wait for it to let go.
  c.AddAgent({"--origin", "file://" + c.origin, "--read-cache-ms", "60000"});
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/config.json", 900, 3);
  c.PublishOk(ckpt, "team-a/m", 0);
  const std::string admin = c.tracker.MintToken("*", "admin", "alice");
  const std::string pod = c.tracker.MintToken("team-a", "read", "pod-7");
  const std::string url = c.FileUrl(0, "m", "config.json");
  const std::string s3 = "http://127.0.0.1:" + std::to_string(c.agents[0]->http_port()) +
                         "/team-a/m/latest/config.json";
  auto plain = [&](const std::string& token) {
    return c.Curl({"-H", "Authorization: Bearer " + token, url});
  };
  auto signed_s3 = [&](const std::string& token) {
    return c.Curl({"--aws-sigv4", "aws:amz:us-east-1:s3", "--user", token + ":" + token, s3});
  };
  REQUIRE(plain(pod).status == 200);  // now kept in the agent's read cache
  REQUIRE(signed_s3(pod).status == 200);

  // 401 vs 403 on the agent's own routes, before any revocation.
  CurlAnswer none = c.Curl({url});
  CHECK(none.status == 401);
  CHECK(none.headers["www-authenticate"].rfind("Bearer", 0) == 0);
  CHECK(plain("garbage").status == 401);
  CHECK(plain(c.tracker.MintToken("team-b", "read", "pod-9")).status == 403);
  CurlAnswer anonymous_s3 = c.Curl({s3});
  CHECK(anonymous_s3.status == 403);
  CHECK_THAT(anonymous_s3.body, Catch::Contains("<Code>AccessDenied</Code>"));

  const Clock::time_point revoked_at = Clock::now();
  REQUIRE(ViaTracker(c, admin, {"revoke", "--id", IdOf(pod)}).exit_code == 0);
  CurlAnswer refused;
  while (Clock::now() - revoked_at < std::chrono::seconds(10)) {
    refused = plain(pod);
    if (refused.status != 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto latency_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - revoked_at).count();
  std::printf("revocation reached the agent's read endpoint in %lld ms (heartbeat %lld ms)\n",
              static_cast<long long>(latency_ms), static_cast<long long>(kHeartbeatMs));
  INFO("latency " << latency_ms << " ms; " << refused.body);
  CHECK(refused.status == 401);
  CHECK_THAT(refused.body, Catch::Contains("was revoked at"));
  CHECK(latency_ms <= kHeartbeatMs + 500);

  CurlAnswer refused_s3 = signed_s3(pod);
  CHECK(refused_s3.status == 403);
  CHECK_THAT(refused_s3.body, Catch::Contains("<Code>InvalidAccessKeyId</Code>"));
  CHECK_THAT(refused_s3.body, Catch::Contains("was revoked at"));
  CHECK(plain(c.reader).status == 200);  // other tokens read on

  // Revoked while the tracker is down, and learnt by the agent once it is
  // back, though the token's lookup is still in the agent's read cache.
  const std::string pod8 = c.tracker.MintToken("team-a", "read", "pod-8");
  REQUIRE(plain(pod8).status == 200);
  c.tracker.Stop();
  REQUIRE(TokenCommand({"revoke", "--subject", "pod-8", "--data-dir", c.tracker.data_dir()})
              .exit_code == 0);
  c.tracker.Start();
  const Clock::time_point restarted = Clock::now();
  CurlAnswer after_restart;
  while (Clock::now() - restarted < std::chrono::seconds(15)) {
    after_restart = plain(pod8);
    if (after_restart.status != 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  INFO(after_restart.body);
  CHECK(after_restart.status == 401);
  CHECK(plain(pod).status == 401);
}

TEST_CASE("an agent whose own token is revoked leaves the ring and cannot register again",
          "[agent][token][revocation]") {
  TestCluster c;
  c.AddAgent();
  const std::string admin = c.tracker.MintToken("*", "admin", "alice");
  REQUIRE(c.agents[0]->Metric("shoal_agent_tracker_registered") == 1);

  REQUIRE(ViaTracker(c, admin, {"revoke", "--subject", "agents"}).exit_code == 0);
  const Clock::time_point revoked_at = Clock::now();
  std::string members;
  while (Clock::now() - revoked_at < std::chrono::seconds(10)) {
    members = c.Curl({"-H", "Authorization: Bearer " + admin, HttpBase(c) + "/v1/agents"}).body;
    if (members == "[]") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(members == "[]");
  CHECK(Clock::now() - revoked_at <= std::chrono::milliseconds(2 * kHeartbeatMs + 1000));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // its retries are refused too
  CHECK(c.agents[0]->Metric("shoal_agent_tracker_registered") == 0);
  CHECK_THAT(c.agents[0]->log(), Catch::Contains("for 'agents' was revoked at"));
}
