// Pulls across real agents: a real tracker, real shoald processes talking
// BitTorrent on 127.0.0.1, a folder origin, and the real shoal CLI.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "integration/pull_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

TEST_CASE("agents pulling at once get identical bytes from the seeding publisher, not the origin",
          "[agent]") {
  PullCluster c(4);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 1);
  auto pub = c.Publish(ckpt, "team-a/llama", 0);
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);
  CHECK_THAT(pub.out, Catch::Contains("seeding from this node's agent"));

  std::vector<pid_t> pulls;
  for (int i = 1; i <= 3; ++i)
    pulls.push_back(c.StartPull(i, "team-a/llama:latest", c.tmp / ("out" + std::to_string(i))));
  for (size_t i = 0; i < pulls.size(); ++i) {
    INFO(Slurp(c.tmp / ("out" + std::to_string(i + 1)) + ".log"));
    REQUIRE(WaitProcess(pulls[i]) == 0);
  }
  for (int i = 1; i <= 3; ++i) CHECK(SameTree(ckpt, c.tmp / ("out" + std::to_string(i))));
  CHECK(c.OriginBytes() <= 1.05 * kUnique);
  CHECK(c.OriginBytes() == 0);  // the publisher's agent seeded everything
  // libtorrent adds a connection's bytes to the session's counters on its
  // one-second tick, and the agent reads them every 500 ms: give the
  // counter those ticks after pulls that took about a second.
  double sent = 0;
  for (int tick = 0; tick < 30 && sent == 0; ++tick) {
    if (tick > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    sent = c.agents[0]->Metric("shoal_agent_peer_bytes_total{direction=\"out\"}");
  }
  CHECK(sent > 0);
  // Materialised files are read-only.
  CHECK((fs::status(c.tmp / "out1/config.json").permissions() & fs::perms::owner_write) ==
        fs::perms::none);

  // A second pull of the same model is served from the cache.
  auto again = c.Shoal(c.reader, {"pull", "team-a/llama:latest", "--to", c.tmp / "out1b", "--agent",
                                  c.agents[1]->socket()});
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("0 B from peers, 0 B from the origin"));
}

TEST_CASE("with no peer holding a chunk, the cluster reads it from the origin once", "[agent]") {
  PullCluster c(2);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 11);
  REQUIRE(c.Publish(ckpt, "team-a/m", -1).exit_code == 0);
  pid_t first = c.StartPull(0, "team-a/m:latest", c.tmp / "a");
  REQUIRE(WaitProcess(first) == 0);
  // Each chunk's owner fetched it on the tracker's order, the agent that
  // does not pull included, so the two together read the model once.
  auto origin_bytes = [&](int i) { return c.agents[i]->Metric("shoal_agent_origin_bytes_total"); };
  CHECK(origin_bytes(0) + origin_bytes(1) == Approx(kUnique));
  CHECK(origin_bytes(1) > 0);
  // The owner that does not pull seeds what it was ordered to fetch and
  // downloads nothing else.
  CHECK(c.agents[1]->Metric("shoal_agent_peer_bytes_total{direction=\"in\"}") == 0);
  CHECK(c.agents[1]->Metric("shoal_agent_cache_bytes") == Approx(origin_bytes(1)));
  double second_before = origin_bytes(1);
  pid_t second = c.StartPull(1, "team-a/m:latest", c.tmp / "b");
  REQUIRE(WaitProcess(second) == 0);
  CHECK(origin_bytes(1) == second_before);
  CHECK(origin_bytes(0) + origin_bytes(1) == Approx(kUnique));
  CHECK(SameTree(ckpt, c.tmp / "a"));
  CHECK(SameTree(ckpt, c.tmp / "b"));
}

// The value of `key` in the one-line JSON object `json`, as a number.
static double JsonNumber(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) FAIL("no " << key << " in " << json);
  return std::stod(json.substr(at + key.size() + 3));
}

TEST_CASE("a cold pull's summary accounts for every byte, the chunks it fetched as owner included",
          "[agent]") {
  PullCluster c(3);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 15);
  c.PublishUnseeded(ckpt, "team-a/m");
  auto pull = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "out", "--agent",
                                 c.agents[0]->socket(), "--json"});
  INFO(pull.out << pull.err);
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
  const double total = JsonNumber(pull.out, "total_bytes");
  const double peers = JsonNumber(pull.out, "bytes_from_peers");
  const double origin = JsonNumber(pull.out, "bytes_from_origin");
  const double cached = JsonNumber(pull.out, "bytes_cached");
  CHECK(total == kUnique);
  CHECK(peers + origin + cached == total);
  CHECK(cached == 0);
  // The pulling agent owns some of the chunks and fetched them from the
  // origin itself, on the tracker's order or as a small file's owner; the
  // other owners fetched the rest, which came from them as peers.
  CHECK(origin > 0);
  CHECK(peers > 0);
  CHECK(c.agents[0]->Metric("shoal_agent_origin_fetches_total{reason=\"owner\"}") > 0);
  CHECK(origin == c.agents[0]->Metric("shoal_agent_origin_bytes_total"));
  CHECK(c.OriginBytes() == Approx(kUnique));
}

TEST_CASE("a new version that changes one file moves only that file's chunks", "[agent]") {
  PullCluster c(2);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 21);
  REQUIRE(c.Publish(ckpt, "team-a/m", 0).exit_code == 0);
  REQUIRE(WaitProcess(c.StartPull(1, "team-a/m:latest", c.tmp / "v1")) == 0);
  WriteRandomFile(ckpt + "/model-00002.safetensors", 7 * kMiB, 999);
  REQUIRE(c.Publish(ckpt, "team-a/m", 0).exit_code == 0);
  auto v2 = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "v2", "--agent",
                               c.agents[1]->socket()});
  INFO(v2.err);
  REQUIRE(v2.exit_code == 0);
  CHECK_THAT(v2.out, Catch::Contains("7.0 MiB from peers, 0 B from the origin"));
  CHECK(SameTree(ckpt, c.tmp / "v2"));
}

TEST_CASE("a corrupt seeder is caught by the hash check and the pull still completes", "[agent]") {
  PullCluster c(2);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 31);
  REQUIRE(c.Publish(ckpt, "team-a/m", 0).exit_code == 0);
  // Damage every chunk file the seeder holds.
  int damaged = 0;
  for (const auto& e : fs::recursive_directory_iterator(c.agents[0]->cache_dir() + "/chunks")) {
    if (!e.is_regular_file() || e.file_size() < 2) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(e.file_size() / 2));
    f.put('\x5a').put('\xa5');
    ++damaged;
  }
  REQUIRE(damaged >= 17);
  auto pull = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "out", "--agent",
                                 c.agents[1]->socket()});
  INFO(pull.err << c.agents[1]->log());
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
  // The bad pieces were noticed, one side or the other, and the good bytes came from the origin.
  CHECK(c.agents[1]->Metric("shoal_agent_hash_failures_total") +
            c.agents[0]->Metric("shoal_agent_cache_corrupt_total") >
        0);
  CHECK(c.agents[1]->Metric("shoal_agent_origin_bytes_total") > 0);
}

TEST_CASE("a dead peer and a dead tracker do not stop a pull", "[agent]") {
  PullCluster c(3);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 41);
  REQUIRE(c.Publish(ckpt, "team-a/m", 0).exit_code == 0);
  c.agents[0]->Kill();  // the only seeder dies; the tracker still lists it for a while
  pid_t pull = c.StartPull(1, "team-a/m:latest", c.tmp / "out1");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  c.tracker.Kill();  // mid-pull
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(ckpt, c.tmp / "out1"));
  c.tracker.Start();
  // The agents find the restarted tracker again, and the next pull works.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.agents[2]->Metric("shoal_agent_tracker_registered") != 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  pid_t next = c.StartPull(2, "team-a/m:latest", c.tmp / "out2");
  int rc = WaitProcess(next);
  INFO(Slurp(c.tmp / "out2.log") << c.agents[2]->log());
  REQUIRE(rc == 0);
  CHECK(SameTree(ckpt, c.tmp / "out2"));
}

TEST_CASE("a pull with a token for another namespace is refused", "[agent][auth]") {
  PullCluster c(1);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 51);
  REQUIRE(c.Publish(ckpt, "team-a/m", -1).exit_code == 0);
  std::string other = c.tracker.MintToken("team-b", "read", "pod-b");
  auto r = RunProcess({CliBinary(), "pull", "team-a/m:latest", "--to", c.tmp / "x", "--agent",
                       c.agents[0]->socket()},
                      {"SHOAL_TOKEN=" + other});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("may not read namespace 'team-a'"));
  CHECK_FALSE(fs::exists(c.tmp / "x"));
}

TEST_CASE("a killed agent restarts with its verified chunks and does not fetch them again",
          "[agent]") {
  PullCluster c(1);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 61);
  REQUIRE(c.Publish(ckpt, "team-a/m", -1).exit_code == 0);
  REQUIRE(WaitProcess(c.StartPull(0, "team-a/m:latest", c.tmp / "a")) == 0);
  c.agents[0]->Kill();
  c.agents[0]->Start();
  auto again = c.Shoal(
      c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "b", "--agent", c.agents[0]->socket()});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("0 B from peers, 0 B from the origin"));
  CHECK(c.agents[0]->Metric("shoal_agent_origin_bytes_total") ==
        0);  // counters restart with the process
  CHECK(SameTree(ckpt, c.tmp / "b"));
}

TEST_CASE("warm has each chunk's owner fetch it, and a later pull reads nothing from the origin",
          "[agent][warm]") {
  PullCluster c(3);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 71);
  c.PublishUnseeded(ckpt, "team-a/m");
  auto warm = c.Shoal(c.writer, {"warm", "team-a/m:latest"});
  INFO(warm.out << warm.err);
  REQUIRE(warm.exit_code == 0);
  CHECK_THAT(warm.out, Catch::Contains("19 chunks across"));  // 10 + 7 + 1 + 1
  CHECK(c.OriginBytes() == Approx(kUnique));  // each chunk fetched once, by its owner
  double before = c.OriginBytes();
  auto pull = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "out", "--agent",
                                 c.agents[2]->socket()});
  INFO(pull.err);
  REQUIRE(pull.exit_code == 0);
  CHECK_THAT(pull.out, Catch::Contains("0 B from the origin"));
  CHECK(c.OriginBytes() == before);
  CHECK(SameTree(ckpt, c.tmp / "out"));
}

TEST_CASE(
    "warm --nodes has the named agents take the whole version from the swarm, read once from the "
    "origin",
    "[agent][warm]") {
  PullCluster c(3);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 81);
  c.PublishUnseeded(ckpt, "team-a/m");
  auto bad = c.Shoal(c.writer, {"warm", "team-a/m:latest", "--nodes", "some"});
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Catch::Contains("--nodes must be all, a count, or key=value"));
  auto warm =
      c.Shoal(c.writer, {"warm", "team-a/m:latest", "--nodes", "rack=r0"});  // agents 0 and 2
  INFO(warm.out << warm.err);
  REQUIRE(warm.exit_code == 0);
  CHECK_THAT(warm.out, Catch::Contains("2 of 2 nodes took the whole version"));
  CHECK(c.OriginBytes() ==
        Approx(kUnique));  // owners read each chunk once; the nodes took it from peers
  for (int i : {0, 2}) {
    std::string dest = c.tmp / ("out" + std::to_string(i));
    auto pull = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", dest, "--agent",
                                   c.agents[static_cast<size_t>(i)]->socket()});
    INFO(pull.err);
    REQUIRE(pull.exit_code == 0);
    CHECK_THAT(pull.out,
               Catch::Contains("0 B from peers, 0 B from the origin"));  // all in its cache already
    CHECK(SameTree(ckpt, dest));
  }
}

TEST_CASE("a chunk whose owner evicted it is fetched again by an owner, not by every puller",
          "[agent][warm]") {
  // Caches of 64 MiB: warming a 192 MiB model onto three owners pushes the
  // first model's chunks out of their caches.
  PullCluster c(3, "64MiB");
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 91);
  REQUIRE(c.Publish(ckpt, "team-a/m", -1).exit_code == 0);
  std::string big = c.tmp / "big";
  for (int i = 0; i < 3; ++i)
    WriteRandomFile(big + "/shard-" + std::to_string(i), 64 * kMiB, 900 + static_cast<unsigned>(i));
  REQUIRE(c.Publish(big, "team-a/big", -1).exit_code == 0);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(2500));  // every agent has seen the whole ring
  REQUIRE(c.Shoal(c.writer, {"warm", "team-a/m:latest"}).exit_code == 0);
  REQUIRE(c.OriginBytes() == Approx(kUnique));
  REQUIRE(c.Shoal(c.writer, {"warm", "team-a/big:latest"}).exit_code == 0);
  double evictions = 0;
  for (auto& a : c.agents) evictions += a->Metric("shoal_agent_cache_evictions_total");
  REQUIRE(evictions > 0);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(3500));  // past the tracker's memory of deliveries

  double before = c.OriginBytes();
  pid_t p0 = c.StartPull(0, "team-a/m:latest", c.tmp / "a");
  pid_t p1 = c.StartPull(1, "team-a/m:latest", c.tmp / "b");
  int rc0 = WaitProcess(p0), rc1 = WaitProcess(p1);
  INFO(Slurp(c.tmp / "a.log") << Slurp(c.tmp / "b.log"));
  REQUIRE(rc0 == 0);
  REQUIRE(rc1 == 0);
  CHECK(SameTree(ckpt, c.tmp / "a"));
  CHECK(SameTree(ckpt, c.tmp / "b"));
  double refetched = c.OriginBytes() - before;
  std::printf(
      "evicted chunks: %.0f of %.0f bytes fetched again from the origin, by %g owner and %g "
      "takeover fetches\n",
      refetched, kUnique, c.tracker.Metric("shoal_tracker_origin_fetches_total{reason=\"owner\"}"),
      c.tracker.Metric("shoal_tracker_origin_fetches_total{reason=\"takeover\"}"));
  CHECK(refetched > 0);                // the evicted chunks came from the origin again...
  CHECK(refetched <= 1.02 * kUnique);  // ...once each, not once per puller
}

TEST_CASE(
    "with two replicas, a warmed model outlives its busiest owner without reading the origin again",
    "[agent][warm][replica]") {
  // The last run gives each agent two peer sessions: a copier then
  // connects to the port of the owner's session that carries the chunk.
  for (auto [replicas, sessions] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{2, 2}}) {
    DYNAMIC_SECTION("replicas " << replicas << ", peer sessions " << sessions) {
      PullCluster c(4, "1GiB", {"--replicas", std::to_string(replicas)},
                    {"--peer-sessions", std::to_string(sessions)});
      std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 101);
      c.PublishUnseeded(ckpt, "team-a/m");
      auto warm = c.Shoal(c.writer, {"warm", "team-a/m:latest"});
      INFO(warm.out << warm.err);
      REQUIRE(warm.exit_code == 0);
      REQUIRE(c.OriginBytes() == Approx(kUnique));
      // Owners 2..R copy each chunk from the swarm once it is delivered.
      const double expect_copies = replicas == 1 ? 0 : 19;
      double copies = 0;
      for (int waited = 0; waited < 300; ++waited) {
        copies = 0;
        for (auto& a : c.agents) copies += a->Metric("shoal_agent_replica_chunks_total");
        if (copies >= expect_copies && c.tracker.Metric("shoal_tracker_replicas_queued") == 0)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      CHECK(copies == expect_copies);
      CHECK(c.tracker.Metric("shoal_tracker_replica_orders_total") == expect_copies);
      // Each copier connected to the owner ranked above it, whose address its
      // ring names, before asking the swarm for the chunk.
      double owner_connects = 0;
      for (auto& a : c.agents) {
        owner_connects += a->Metric("shoal_agent_replica_owner_connects_total");
      }
      CHECK(owner_connects == expect_copies);
      CHECK(c.OriginBytes() == Approx(kUnique));  // replicas never read the origin

      size_t busiest = 0;
      for (size_t i = 1; i < c.agents.size(); ++i) {
        if (c.agents[i]->Metric("shoal_agent_origin_bytes_total") >
            c.agents[busiest]->Metric("shoal_agent_origin_bytes_total")) {
          busiest = i;
        }
      }
      double lost = c.agents[busiest]->Metric("shoal_agent_origin_bytes_total");
      REQUIRE(lost > 0);
      double before = c.OriginBytes() - lost;
      c.agents[busiest]->Kill();
      size_t puller = (busiest + 1) % c.agents.size();
      std::string dest = c.tmp / "out";
      auto pull = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", dest, "--agent",
                                     c.agents[puller]->socket()});
      INFO(pull.out << pull.err);
      REQUIRE(pull.exit_code == 0);
      CHECK(SameTree(ckpt, dest));
      double refetched = 0;
      for (size_t i = 0; i < c.agents.size(); ++i) {
        if (i != busiest) refetched += c.agents[i]->Metric("shoal_agent_origin_bytes_total");
      }
      refetched -= before;
      std::printf(
          "replicas %d: the dead owner had fetched %.0f bytes; %.0f fetched again from the "
          "origin\n",
          replicas, lost, refetched);
      if (replicas == 1) {
        CHECK(refetched == Approx(lost));  // its chunks were nowhere else
      } else {
        CHECK(refetched == 0);  // the second owners held them
      }
    }
  }
}

TEST_CASE(
    "an idle cluster re-announces what it seeds rarely, and a restarted tracker hears at once",
    "[agent][announce]") {
  PullCluster c(3, "1GiB", {"--seed-announce-interval", "30s"});  // leechers every 1 s
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 61);          // 4 files: 4 torrents
  REQUIRE(c.Publish(ckpt, "team-a/m", 0).exit_code == 0);
  for (int i = 1; i <= 2; ++i) {
    auto pull =
        c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / ("out" + std::to_string(i)),
                           "--agent", c.agents[static_cast<size_t>(i)]->socket()});
    REQUIRE(pull.exit_code == 0);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // completion announces
  // Every way an agent reaches the swarms: announces and batches of them.
  auto requests = [&] {
    return c.tracker.Metric("shoal_tracker_announces_total") +
           c.tracker.Metric("shoal_tracker_announce_batches_total");
  };
  const double before = requests();
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const double idle = requests() - before;
  std::printf("idle: %.0f tracker requests in 6 s from 3 agents seeding 4 torrents\n", idle);
  // Announcing at the leechers' 1 s would be 72; a seeder still seeding
  // changes nothing, so the tracker hears nothing.
  CHECK(idle <= 3);

  // A restarted tracker knows no swarm; the agents announce everything when
  // they register again, so a new puller finds the seeders, not the origin.
  c.tracker.Kill();
  c.tracker.Start();
  // An agent may still read "registered" before it notices the old tracker
  // is gone, so wait on what the new tracker has heard: every agent in the
  // swarm of every torrent it seeds, well before the 30 s seed interval.
  double seeding = 0;
  for (auto& a : c.agents) seeding += a->Metric("shoal_agent_torrents");
  REQUIRE(seeding >= 3 * 2);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.tracker.Metric("shoal_tracker_swarm_peers") < seeding &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(c.tracker.Metric("shoal_tracker_swarm_peers") == seeding);
  auto agent = std::make_unique<AgentProcess>(
      c.tmp / "agents", "late",
      std::vector<std::string>{"--tracker", c.tracker.rpc_address(), "--token", c.agent_token,
                               "--origin", "file://" + c.origin, "--origin-fallback-ms", "700"});
  agent->Start();
  auto late = c.Shoal(
      c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "late", "--agent", agent->socket()});
  INFO(late.err);
  REQUIRE(late.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "late"));
  CHECK(agent->Metric("shoal_agent_origin_bytes_total") == 0);
  CHECK_THAT(late.out, Catch::Contains("0 B from the origin"));
}
