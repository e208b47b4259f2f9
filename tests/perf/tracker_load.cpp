// Tracker load generator: many simulated agents, each on its own TCP
// connection, speaking the agents' Cap'n Proto RPC to one or more trackers.
// Run by tracker_load.sh, which starts the tracker and reports; not a test.
//
//   tracker_load --tracker HOST:PORT[,HOST:PORT...] --token T --model NS/NAME
//                [--tracker-pid PID[,PID...]] [--agents 10000] [--threads 3]
//                [--steady-s 60] [--leechers 0.05] [--need-rate 0.01]
//                [--churn-rate 0.001] [--churn-down-ms 3000] [--torrents N] [--numwant 50]
//                [--ring-follow-s 60] [--orders-use-ring 0] [--load-nice 10]
//
// Agent i talks to tracker i % N. Each agent's life, as shoald lives it:
// connect, registerAgent (name load-i, peer port 20000+i), one announceBatch
// with the version's torrents as seeding (leechers: as downloading, and again
// every intervalMs the tracker answers, wanting peers), a heartbeat every
// heartbeatMs (following the ring's changes while it works: a leecher, and
// with --orders-use-ring 1 an agent for --ring-follow-s after a fetch
// order), and now and then a need for a file's chunks (on a Registry
// from Gateway.authenticate on the same connection). Churn: agents drop
// their connection without goodbye and come back churn-down-ms later.
//
// The load's threads run at --load-nice (10): on a machine it shares with
// the tracker, the tracker and the probe's thread are served first, so the
// probe's latencies are the tracker's and the kernel's, not the load's turns.
//
// Phases: ramp (every agent joins and announces, at most kJoinsInFlight per
// thread at once, under the tracker's unauthenticated-connection limit),
// a settle pause, the steady window (rates, latencies and CPU measured
// here), then one agent stops heartbeating with its connection open and the
// time until the tracker drops it is measured. Prints one JSON object.
//
// This file: the options, the version the agents announce, and the run's
// phases. tracker_load.h lists the other files.
#include "perf/tracker_load.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/capnp_views.h"
#include "proto/rpc_tls.h"
#include "shoal/file_torrent_info.h"
#include "shoal/manifest_codec.h"

namespace shoal::tracker_load {

const double kSlowMs = [] {
  const char* v = std::getenv("SHOAL_LOAD_SLOW_MS");
  return v != nullptr ? std::atof(v) : 0.0;
}();
const Clock::time_point kProcessStart = std::chrono::steady_clock::now();

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tracker_load: %s\n", what.c_str());
  std::exit(1);
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--tracker") {
      o.trackers = Split(v);
    } else if (k == "--tracker-pid") {
      for (const std::string& p : Split(v)) o.tracker_pids.push_back(std::stoi(p));
    } else if (k == "--tracker-http") {
      o.tracker_http = Split(v);
    } else if (k == "--token") {
      o.token = v;
    } else if (k == "--model") {
      auto slash = v.find('/');
      if (slash == std::string::npos) Die("--model is NS/NAME");
      o.ns = v.substr(0, slash);
      o.name = v.substr(slash + 1);
    } else if (k == "--agents") {
      o.agents = std::stoi(v);
    } else if (k == "--probe-agents") {
      o.probe_agents = std::stoi(v);
    } else if (k == "--threads") {
      o.threads = std::stoi(v);
    } else if (k == "--steady-s") {
      o.steady_s = std::stod(v);
    } else if (k == "--settle-s") {
      o.settle_s = std::stod(v);
    } else if (k == "--leechers") {
      o.leechers = std::stod(v);
    } else if (k == "--need-rate") {
      o.need_rate = std::stod(v);
    } else if (k == "--churn-rate") {
      o.churn_rate = std::stod(v);
    } else if (k == "--churn-down-ms") {
      o.churn_down_ms = std::stoi(v);
    } else if (k == "--torrents") {
      o.torrents = std::stoul(v);
    } else if (k == "--ring-follow-s") {
      o.ring_follow_s = std::stod(v);
    } else if (k == "--load-nice") {
      o.load_nice = std::stoi(v);
    } else if (k == "--orders-use-ring") {
      o.orders_use_ring = v == "1" || v == "true";
    } else if (k == "--numwant") {
      o.numwant = static_cast<uint32_t>(std::stoul(v));
    } else {
      Die("unknown flag " + k);
    }
  }
  if (o.trackers.empty() || o.token.empty() || o.name.empty()) {
    Die("usage: tracker_load --tracker HOST:PORT[,...] --token T --model NS/NAME [flags]");
  }
  return o;
}

// Reads the published version: its torrents' info-hashes and files' chunks.
void LoadVersion(Shared& shared) {
  auto io = kj::setupAsyncIo();
  TrackerEndpoint endpoint;
  endpoint.address = shared.o.trackers[0];
  auto stream = DialTracker(*io.provider, endpoint).wait(io.waitScope);
  capnp::TwoPartyClient client(*stream);
  auto gateway = client.bootstrap().castAs<proto::Gateway>();
  auto auth = gateway.authenticateRequest();
  auth.setToken(shared.o.token);
  auto registry = auth.send().wait(io.waitScope).getRegistry();
  auto req = registry.resolveRequest();
  req.setNamespace(shared.o.ns);
  req.setName(shared.o.name);
  req.setRef("latest");
  auto response = req.send().wait(io.waitScope);
  auto signed_manifest = response.getSigned();
  shared.version_id = Bytes(signed_manifest.getVersionId());
  Result<Manifest> m = DecodeManifest(Bytes(signed_manifest.getManifest()));
  if (!m.ok()) Die(m.status().ToString());
  // With --peer-tls off the cluster's peer CA is empty.
  for (const Digest& d : VersionTorrentHashes(*m, "")) {
    shared.hashes.emplace_back(reinterpret_cast<const char*>(d.data()), 20);
  }
  for (const FileEntry& f : m->files) {
    std::vector<std::string> ids;
    for (const ChunkId& c : f.ChunkIds())
      ids.emplace_back(reinterpret_cast<const char*>(c.data()), 32);
    if (!ids.empty()) shared.chunks.push_back(std::move(ids));
    if (f.size > 0) shared.sizes.push_back(f.size);
  }
  shared.sizes.resize(shared.hashes.size(), m->piece_size);
  if (shared.o.torrents > 0 && shared.o.torrents < shared.hashes.size()) {
    shared.hashes.resize(shared.o.torrents);
    shared.sizes.resize(shared.o.torrents);
  }
  if (shared.chunks.empty()) Die("the version has no chunks");
}

// One descriptor per agent, and a few more.
void RaiseFileLimit(const Options& o) {
  struct rlimit lim;
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < static_cast<rlim_t>(o.agents + o.probe_agents) + 64) {
    Die("RLIMIT_NOFILE " + std::to_string(lim.rlim_cur) + " is below one descriptor per agent");
  }
}

// The load's workers on their threads, then the probe's on its own.
std::vector<std::thread> StartWorkers(Shared& shared,
                                      std::vector<std::unique_ptr<Worker>>& workers) {
  const Options& o = shared.o;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t)
    workers.push_back(std::make_unique<Worker>(shared, t, t, o.agents, o.threads));
  // The probe's agents, last, on their own thread.
  workers.push_back(
      std::make_unique<Worker>(shared, o.threads, o.agents, o.agents + o.probe_agents, 1));
  for (size_t t = 0; t < workers.size(); ++t) {
    const bool probe = t + 1 == workers.size();
    threads.emplace_back([&w = workers[t], probe, nice = o.load_nice] {
      // The load's threads yield the cores to the tracker and to the
      // probe, as a fleet on other machines would.
      if (!probe && nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
      w->Run();
    });
  }
  return threads;
}

// The steady window: rates and latencies are counted in it (phase 1), and
// the trackers' CPU and event loop lag measured over it.
void Steady(Shared& shared, Measured& m) {
  const Options& o = shared.o;
  auto scrape = [&o] {
    std::vector<std::string> texts;
    for (const std::string& a : o.tracker_http) texts.push_back(FetchMetrics(a));
    return HistogramBuckets(texts, "shoal_tracker_event_loop_lag_seconds");
  };
  m.lag_before = scrape();
  shared.phase = 1;
  const auto t0 = Clock::now();
  const double tracker_cpu0 = SumCpu(o.tracker_pids), self_cpu0 = CpuSeconds(getpid());
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.steady_s * 1000)));
  const double tracker_cpu1 = SumCpu(o.tracker_pids), self_cpu1 = CpuSeconds(getpid());
  m.steady_s = Since(t0) / 1000;
  shared.phase = 2;
  m.lag_after = scrape();
  std::fprintf(stderr, "tracker_load: steady window done; stopping agent 0's heartbeats\n");
  m.tracker_cpu = tracker_cpu1 - tracker_cpu0;
  m.self_cpu = self_cpu1 - self_cpu0;
}

}  // namespace
}  // namespace shoal::tracker_load

using namespace shoal::tracker_load;

int main(int argc, char** argv) {
  Shared shared;
  shared.o = ParseArgs(argc, argv);
  const Options& o = shared.o;
  RaiseFileLimit(o);
  LoadVersion(shared);
  std::fprintf(stderr, "tracker_load: %zu torrents, %zu files; %d agents on %d threads\n",
               shared.hashes.size(), shared.chunks.size(), o.agents, o.threads);

  Measured m;
  m.rss_before = SumRss(o.tracker_pids);
  const auto t_start = Clock::now();
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads = StartWorkers(shared, workers);
  while (shared.joined < o.agents + o.probe_agents && Since(t_start) < 900000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  m.ramp_ms = Since(t_start);
  std::fprintf(stderr, "tracker_load: %d agents joined in %.1f s\n", shared.joined.load(),
               m.ramp_ms / 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.settle_s * 1000)));
  m.rss_after = SumRss(o.tracker_pids);
  Steady(shared, m);

  shared.freeze = true;
  const auto t_freeze = Clock::now();
  while ((shared.dropped_ms < 0 || shared.ring_gone_ms < 0) && Since(t_freeze) < 60000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  shared.stop = true;
  for (auto& t : threads) t.join();

  Stats probe = std::move(workers.back()->stats());
  workers.pop_back();
  Stats all = Merge(workers);
  if (kSlowMs > 0) PrintSlow(all, probe);
  PrintReport(shared, all, probe, m);
  return 0;
}
