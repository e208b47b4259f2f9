// A fleet of three shoal-tracker processes sharing one registry in a real
// three-member etcd cluster (tests/etcd/) and one secrets folder, driven by
// the real CLI: what one tracker writes the others serve, a tracker that
// lost its disk serves the fleet's state, a publish survives (or cleanly
// fails) the loss of etcd's leader, the CLI moves on to a surviving
// tracker, and the trackers split the origin budget among the live ones.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "etcd/etcd_test_env.h"
#include "shoal/token.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
using Clock = std::chrono::steady_clock;

namespace {

// Three trackers on a fresh prefix of the test etcd cluster and a folder
// origin.
ClusterOptions FleetOptions(const std::string& test) {
  std::string hosts;
  for (const std::string& e : shoal_test::EtcdEndpoints()) {
    hosts += (hosts.empty() ? "" : ",") + e.substr(e.find("://") + 3);
  }
  ClusterOptions o;
  o.trackers = 3;
  o.registry = "etcd://" + hosts + "/" + shoal_test::FreshPrefix(test);
  return o;
}

// `shoal args...` as `token`, through tracker `i` only.
ProcessResult ShoalVia(const TestCluster& c, size_t i, const std::string& token,
                       std::vector<std::string> args) {
  args.insert(args.begin(), CliBinary());
  std::vector<std::string> env = c.CliEnv(token);
  env.push_back("SHOAL_TRACKER=" + c.trackers[i]->rpc_address());  // the last one wins
  return RunProcess(args, env);
}

ProcessResult Ok(ProcessResult r) {
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

// The version id (64 hex digits) `shoal publish` printed.
std::string PublishedId(const ProcessResult& r) {
  std::string id = PublishedVersionId(r);
  REQUIRE(id.size() == 64);
  return id;
}

std::string PublishVia(const TestCluster& c, size_t i, const std::string& dir,
                       const std::string& name, const std::string& tag = "latest") {
  return PublishedId(Ok(ShoalVia(
      c, i, c.writer,
      {"publish", dir, "--name", name, "--tag", tag, "--piece-size", "65536", "--no-seed"})));
}

// `shoal ls ns/model` rows as "id tags" ("" for no tags), in the order
// printed, header dropped.
std::vector<std::string> VersionRows(const ProcessResult& ls) {
  std::vector<std::string> rows;
  std::istringstream in(ls.out);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    if (line.size() < 64) continue;
    // Fixed columns: id (64), created (20), size (10), files (5), by (12), tags.
    const size_t tags_at = 64 + 2 + 20 + 2 + 10 + 2 + 5 + 2 + 12 + 1;
    std::string tags = line.size() > tags_at ? line.substr(tags_at) : "";
    while (!tags.empty() && tags.back() == ' ') tags.pop_back();
    rows.push_back(line.substr(0, 64) + " " + tags);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// The first line of `shoal inspect ns/model:ref`'s summary that names the
// version, and the signer, which every tracker of the fleet shares.
std::string InspectVia(const TestCluster& c, size_t i, const std::string& ref) {
  return Ok(ShoalVia(c, i, c.reader, {"inspect", ref})).out;
}

// Chunks in a folder origin.
size_t ChunksIn(const std::string& origin) {
  std::error_code ec;
  size_t n = 0;
  for (std::filesystem::directory_iterator it(origin + "/chunks", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n;
}

int NonEmptyLines(const std::string& s) {
  std::istringstream in(s);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.empty() ? 0 : 1;
  return n;
}

// Waits up to `seconds` for tracker `t`'s gauges to read `trackers` and
// `share`; returns the seconds it took, or -1.
double WaitForShare(const TrackerProcess& t, double trackers, double share, double seconds) {
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
    if (t.Metric("shoal_tracker_fleet_trackers") == trackers &&
        t.Metric("shoal_tracker_origin_budget_share") == share) {
      return std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return -1;
}

}  // namespace

TEST_CASE("three trackers split the origin budget, and the survivors take a dead one's share",
          "[fleet]") {
  TestCluster c(FleetOptions("fleet-budget"));
  for (const TrackerProcess* t : c.trackers) {
    INFO(t->log());
    CHECK(WaitForShare(*t, 3, 22, 5) >= 0);  // ceil(64 / 3)
    CHECK(t->Metric("shoal_tracker_origin_budget") == 64);
  }
  c.trackers[2]->Kill();
  // Its lease (5 s) runs out, and each survivor counts again within 1.5 s.
  for (size_t i = 0; i < 2; ++i) {
    const double took = WaitForShare(*c.trackers[i], 2, 32, 12);
    INFO(c.trackers[i]->log());
    CHECK(took >= 0);
    CHECK(took < 9);
  }
  // A tracker that comes back is counted again.
  c.trackers[2]->Start();
  for (const TrackerProcess* t : c.trackers) CHECK(WaitForShare(*t, 3, 22, 5) >= 0);
}

TEST_CASE("what one tracker publishes, tags and revokes, the others serve", "[fleet]") {
  TestCluster c(FleetOptions("fleet-shared"));
  WriteRandomFile(c.tmp / "v1/w.bin", 200000, 1);
  WriteRandomFile(c.tmp / "v2/w.bin", 200000, 2);
  const std::string v1 = PublishVia(c, 0, c.tmp / "v1", "team-a/m");
  const std::string v2 = PublishVia(c, 0, c.tmp / "v2", "team-a/m");
  REQUIRE(v1 != v2);

  // Through B and C: the same versions, tags and manifests A wrote.
  const std::vector<std::string> want =
      VersionRows(Ok(ShoalVia(c, 0, c.reader, {"ls", "team-a/m"})));
  REQUIRE(want.size() == 2);
  for (size_t i : {1, 2}) {
    CHECK(VersionRows(Ok(ShoalVia(c, i, c.reader, {"ls", "team-a/m"}))) == want);
    CHECK(InspectVia(c, i, "team-a/m:latest") == InspectVia(c, 0, "team-a/m:latest"));
    CHECK(InspectVia(c, i, "team-a/m:latest").find(v2.substr(0, 12)) != std::string::npos);
  }
  CHECK(Ok(ShoalVia(c, 1, c.reader, {"ls", "team-a"})).out.find("team-a/m  2 versions") !=
        std::string::npos);

  // A tag moved through B is seen through C, with both moves in its history.
  Ok(ShoalVia(c, 1, c.writer, {"tag", "team-a/m:" + v1, "latest"}));
  CHECK(InspectVia(c, 2, "team-a/m:latest").find(v1.substr(0, 12)) != std::string::npos);
  const std::string history =
      Ok(ShoalVia(c, 2, c.reader, {"tag", "team-a/m", "latest", "--history"})).out;
  INFO(history);
  CHECK(NonEmptyLines(history) == 3);  // set at v1's publish, moved to v2, moved back
  CHECK(history.find("(none) -> " + v1.substr(0, 12)) != std::string::npos);
  CHECK(history.find(v1.substr(0, 12) + " -> " + v2.substr(0, 12)) != std::string::npos);
  CHECK(history.find(v2.substr(0, 12) + " -> " + v1.substr(0, 12)) != std::string::npos);

  // A token revoked through C is refused through A and B within seconds.
  const std::string reader = c.tracker.MintToken("team-a", "read", "doomed-pod");
  for (size_t i : {0, 1}) Ok(ShoalVia(c, i, reader, {"ls", "team-a"}));
  const std::string admin = c.tracker.MintToken("*", "admin", "ops");
  const std::string id = shoal::PeekTokenClaims(reader)->id;
  Ok(RunProcess({TrackerBinary(), "token", "revoke", "--tracker",
                 "http://127.0.0.1:" + std::to_string(c.trackers[2]->http_port()), "--token", admin,
                 "--id", id}));
  const auto revoked_at = Clock::now();
  for (size_t i : {0, 1}) {
    ProcessResult r;
    do {
      r = ShoalVia(c, i, reader, {"ls", "team-a"});
      if (r.exit_code != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } while (Clock::now() - revoked_at < std::chrono::seconds(6));
    INFO("tracker " << i << ": " << r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK(NonEmptyLines(r.err) == 1);
    CHECK(r.err.find("revoked") != std::string::npos);
  }
  CHECK(Clock::now() - revoked_at < std::chrono::seconds(4));
}

TEST_CASE("a tracker that lost its data folder serves the fleet's state", "[fleet]") {
  TestCluster c(FleetOptions("fleet-wiped"));
  WriteRandomFile(c.tmp / "a/w.bin", 300000, 3);
  WriteRandomFile(c.tmp / "a/cfg.json", 2000, 4);
  WriteRandomFile(c.tmp / "b/w.bin", 100000, 5);
  const std::string a = PublishVia(c, 0, c.tmp / "a", "team-a/alpha");
  const std::string b = PublishVia(c, 2, c.tmp / "b", "team-a/beta", "stable");
  Ok(ShoalVia(c, 0, c.writer, {"tag", "team-a/alpha:" + a, "prod"}));
  const std::string before = Ok(ShoalVia(c, 0, c.reader, {"ls", "team-a"})).out;
  const std::string alpha_before = InspectVia(c, 0, "team-a/alpha:prod");

  c.trackers[1]->RestartWiped();

  CHECK(Ok(ShoalVia(c, 1, c.reader, {"ls", "team-a"})).out == before);
  CHECK(InspectVia(c, 1, "team-a/alpha:prod") == alpha_before);
  CHECK(InspectVia(c, 1, "team-a/alpha:" + a) == alpha_before);
  CHECK(InspectVia(c, 1, "team-a/beta:stable").find(b.substr(0, 12)) != std::string::npos);
  CHECK(VersionRows(Ok(ShoalVia(c, 1, c.reader, {"ls", "team-a/alpha"}))) ==
        std::vector<std::string>{a + " latest,prod"});

  // It writes to the fleet again, and the others see that.
  WriteRandomFile(c.tmp / "c/w.bin", 100000, 6);
  const std::string g = PublishVia(c, 1, c.tmp / "c", "team-a/gamma");
  CHECK(InspectVia(c, 0, "team-a/gamma:latest").find(g.substr(0, 12)) != std::string::npos);
  CHECK(InspectVia(c, 2, "team-a/gamma:" + g).find(g.substr(0, 12)) != std::string::npos);
}

TEST_CASE("a publish across the loss of etcd's leader commits whole or fails in one line",
          "[fleet]") {
  TestCluster c(FleetOptions("fleet-leader"));
  // ~30 MiB in 64 KiB pieces: long enough to be under way when the leader dies.
  for (int i = 0; i < 6; ++i) {
    WriteRandomFile(c.tmp / ("ckpt/shard-" + std::to_string(i) + ".bin"), 5 << 20, 10 + i);
  }
  const std::vector<std::string> publish = {"publish",      c.tmp / "ckpt", "--name",
                                            "team-a/big",   "--tag",        "latest",
                                            "--piece-size", "65536",        "--no-seed"};
  ProcessResult first;
  std::atomic<bool> done{false};
  std::thread run([&] {
    first = ShoalVia(c, 0, c.writer, publish);
    done = true;
  });
  SECTION("right after it starts") { std::this_thread::sleep_for(std::chrono::milliseconds(700)); }
  SECTION("as it commits") {
    // Once every chunk is in the origin, the commit comes next.
    const auto start = Clock::now();
    while (!done && ChunksIn(c.origin) < 480 && Clock::now() - start < std::chrono::seconds(60)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  const bool killed_during = !done;
  const std::string killed = shoal_test::EtcdControl("kill-leader");
  run.join();
  INFO("killed member " << killed << "; first publish: " << first.out << first.err);
  CHECK(killed_during);  // else this test tests nothing
  if (first.exit_code != 0) {
    CHECK(NonEmptyLines(first.err) == 1);
    CHECK(first.err.rfind("shoal: error: ", 0) == 0);
  }

  // A rerun completes (etcd elects a new leader within seconds).
  ProcessResult again;
  const auto start = Clock::now();
  do {
    again = ShoalVia(c, 0, c.writer, publish);
  } while (again.exit_code != 0 && Clock::now() - start < std::chrono::seconds(20));
  shoal_test::EtcdControl("restart", killed);
  INFO("rerun: " << again.out << again.err);
  REQUIRE(again.exit_code == 0);
  const std::string id = PublishedId(again);

  // Exactly the committed versions, each whole: listed with its tags and
  // resolvable with its summary through every tracker.
  const std::vector<std::string> rows =
      VersionRows(Ok(ShoalVia(c, 1, c.reader, {"ls", "team-a/big"})));
  std::vector<std::string> want = {id + " latest"};
  if (first.exit_code == 0 && PublishedId(first) != id) want.push_back(PublishedId(first) + " ");
  std::sort(want.begin(), want.end());
  CHECK(rows == want);
  for (size_t i : {0, 1, 2}) {
    const std::string summary = InspectVia(c, i, "team-a/big:latest");
    CHECK(summary.find(id.substr(0, 12)) != std::string::npos);
    CHECK(summary.find("6 files") != std::string::npos);
  }
}

TEST_CASE("with two trackers of three dead, the CLI lists and publishes through the survivor",
          "[fleet]") {
  TestCluster c(FleetOptions("fleet-survivor"));
  WriteRandomFile(c.tmp / "v1/w.bin", 100000, 7);
  const std::string v1 = PublishVia(c, 0, c.tmp / "v1", "team-a/m");
  c.trackers[0]->Kill();
  c.trackers[2]->Kill();

  // Every call goes to one of the three at random; the dead refuse at once.
  for (int i = 0; i < 4; ++i) {
    const auto start = Clock::now();
    ProcessResult ls = Ok(c.Shoal(c.reader, {"ls", "team-a/m"}));
    CHECK(Clock::now() - start < std::chrono::seconds(5));
    CHECK(VersionRows(ls) == std::vector<std::string>{v1 + " latest"});
  }
  WriteRandomFile(c.tmp / "v2/w.bin", 100000, 8);
  const auto start = Clock::now();
  ProcessResult pub = Ok(c.Shoal(
      c.writer, {"publish", c.tmp / "v2", "--name", "team-a/m", "--tag", "latest", "--no-seed"}));
  CHECK(Clock::now() - start < std::chrono::seconds(10));
  const std::string v2 = PublishedId(pub);
  CHECK(InspectVia(c, 1, "team-a/m:latest").find(v2.substr(0, 12)) != std::string::npos);
}
