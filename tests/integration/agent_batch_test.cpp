// An agent seeding many torrents, with real shoald processes and a real
// tracker: while idle it costs the tracker no requests, however often
// libtorrent announces; a pull still finds it; and its swarm entries go
// when it dies.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr int kTorrents = 50;
// Each file is larger than a 16 KiB piece, so each is its own torrent
// (smaller ones would share a bundle).
constexpr size_t kFileBytes = 40000;

// Waits up to `seconds` for `read` to give `want`; returns the last value.
double WaitFor(const std::function<double()>& read, double want, int seconds) {
  double v = read();
  for (int i = 0; i < seconds * 10 && v != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    v = read();
  }
  return v;
}

}  // namespace

TEST_CASE("an idle agent seeding many torrents costs the tracker no requests per interval",
          "[agent][batch]") {
  ClusterOptions o;
  // Short intervals: libtorrent re-announces each seeded torrent every 5 s
  // (its least interval), which before batches made 10 tracker requests a
  // second for these 50 torrents.
  o.tracker_flags = {"--announce-interval", "1s", "--seed-announce-interval", "2s"};
  o.agents = 2;
  // As in a real cluster, the agents can reach the origin: in about one run
  // of fifteen a torrent's first tracker reply to the puller lists no peer,
  // and its chunks are then fetched by their owners.
  o.agents_use_origin = true;
  TestCluster c(o);
  const std::string src = c.tmp / "many";
  for (int i = 0; i < kTorrents; ++i) {
    WriteRandomFile(src + "/shard-" + std::to_string(i) + ".bin", kFileBytes,
                    static_cast<unsigned>(100 + i));
  }
  c.PublishOk(src, "team-a/many", 0, "16384");
  AgentProcess& seeder = *c.agents[0];
  REQUIRE(seeder.Metric("shoal_agent_torrents") == kTorrents);
  auto held = [&] { return c.tracker.Metric("shoal_tracker_swarm_held_peers"); };
  REQUIRE(WaitFor(held, kTorrents, 15) == kTorrents);

  // Idle for over two of libtorrent's announce rounds (eleven leecher intervals).
  auto requests = [&] {
    return c.tracker.Metric("shoal_tracker_announces_total") +
           c.tracker.Metric("shoal_tracker_announce_batches_total");
  };
  auto entries = [&] { return c.tracker.Metric("shoal_tracker_announce_batch_entries_total"); };
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double requests_before = requests();
  const double entries_before = entries();
  const double local_before = seeder.Metric("shoal_agent_announces_answered_locally_total");
  std::this_thread::sleep_for(std::chrono::seconds(11));
  const double idle_requests = requests() - requests_before;
  const double idle_entries = entries() - entries_before;
  const double local = seeder.Metric("shoal_agent_announces_answered_locally_total") - local_before;
  INFO("idle: " << idle_requests << " tracker requests of " << idle_entries << " entries, " << local
                << " announces answered by the agent");
  CHECK(idle_requests <= 2);
  CHECK(idle_entries <= 2);  // a seeder still seeding is no change
  // libtorrent did announce every torrent meanwhile, twice or more: the
  // relay answered them.
  CHECK(local >= 1.5 * kTorrents);
  CHECK(held() == kTorrents);

  // A second agent pulls every file from the seeder, in a few batches.
  const double batches_before = c.tracker.Metric("shoal_tracker_announce_batches_total");
  const std::string out = c.tmp / "out";
  auto pull_start = std::chrono::steady_clock::now();
  pid_t pull = c.StartPull(1, "team-a/many:latest", out);
  const int pull_rc = WaitProcess(pull);
  INFO(Slurp(out + ".log"));
  REQUIRE(pull_rc == 0);
  const double pull_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - pull_start).count();
  CHECK(SameTree(src, out));
  // The seeder supplied the pull: the origin, there for the odd torrent
  // whose first reply lists no peer, served at most a few of its chunks.
  CHECK(c.OriginBytes() <= 0.5 * kTorrents * kFileBytes);
  const double pull_batches =
      c.tracker.Metric("shoal_tracker_announce_batches_total") - batches_before;
  INFO("batches during the pull: " << pull_batches << " in " << pull_seconds << " s");
  // At most one per 250 ms while changes stream in, and far fewer than
  // one per torrent.
  CHECK(pull_batches <= 4 * pull_seconds + 2);
  CHECK(pull_batches < kTorrents / 2);
  CHECK(c.agents[1]->Metric("shoal_agent_swarm_changes_sent_total") >= kTorrents);

  // The tracker restarts with empty swarms: both agents register again
  // and send every entry anew, without waiting for libtorrent.
  const double held_both = WaitFor(held, 2 * kTorrents, 10);
  CHECK(held_both == 2 * kTorrents);
  c.tracker.Kill();
  c.tracker.Start();
  CHECK(WaitFor(held, held_both, 20) == held_both);

  // The seeder dies: its entries leave the swarms within the heartbeat
  // bound (three 2 s heartbeats), at once when its connection closes.
  seeder.Kill();
  CHECK(WaitFor(held, held_both - kTorrents, 8) == held_both - kTorrents);
}

TEST_CASE("an agent heartbeats at the longer interval its tracker tells as the fleet grows",
          "[agent][batch]") {
  ClusterOptions o;
  // Half a heartbeat a second: one agent heartbeats every 2 s, two every 4 s.
  o.tracker_flags = {"--announce-interval", "1s", "--heartbeat-budget", "0.5"};
  o.agents = 2;
  TestCluster c(o);
  // The first agent joined alone and was told 2 s; its next heartbeat
  // after the second joined brings 4 s.
  AgentProcess& first = *c.agents[0];
  auto told_4s = [&]() -> double {
    std::istringstream log(first.log());
    for (std::string line; std::getline(log, line);) {
      if (line.find("\"tracker.heartbeat_interval\"") != std::string::npos &&
          line.find("\"ms\":4000") != std::string::npos) {
        return 1;
      }
    }
    return 0;
  };
  CHECK(WaitFor(told_4s, 1, 6) == 1);
  CHECK(c.tracker.Metric("shoal_tracker_heartbeat_interval_seconds") == 4);
  // Past three of the old 2 s, both are still members: they follow.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  CHECK(c.tracker.Metric("shoal_tracker_agents") == 2);
}

TEST_CASE("an idle agent does not follow the ring, and a pull makes it follow from then on",
          "[agent][batch][ring]") {
  ClusterOptions o;
  o.agents = 3;
  TestCluster c(o);
  const std::string src = c.tmp / "model";
  WriteRandomFile(src + "/weights.bin", 3 << 20, 7);
  c.PublishOk(src, "team-a/ring", 0, "262144");
  auto sent = [&] { return c.tracker.Metric("shoal_tracker_ring_changes_sent_total"); };
  auto following = [&](int i) { return c.agents[i]->Metric("shoal_agent_ring_following"); };

  // Nothing has used the ring: no agent follows it, and a member joining
  // sends none of them a change (two of the agents' 2 s heartbeats later).
  for (int i = 0; i < 3; ++i) CHECK(following(i) == 0);
  const double idle_before = sent();
  c.AddAgent();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  CHECK(sent() == idle_before);

  // A pull asks for the ring: the puller follows it from its next
  // heartbeat on, the others stay idle, and the pull is whole.
  const std::string out = c.tmp / "out";
  pid_t pull = c.StartPull(1, "team-a/ring:latest", out);
  INFO(Slurp(out + ".log"));
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(src, out));
  CHECK(following(1) == 1);
  CHECK(following(2) == 0);
  // The next member's join reaches the follower, on a heartbeat.
  const double busy_before = sent();
  c.AddAgent();
  CHECK(WaitFor([&] { return sent() > busy_before ? 1.0 : 0.0; }, 1, 8) == 1);
  INFO("ring changes sent: idle " << idle_before << ", after the pull " << sent());
  CHECK(sent() - busy_before <= 2);  // the one follower, one change (once more if it asked ring())
}
