// shoal-sim: simulates N nodes pulling one model through Shoal (see
// simulation.h and docs/scale.md). Prints one summary line; --out writes
// the run as JSON.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>

#include "shoal/log.h"
#include "sim/sim_options.h"
#include "sim/sim_report.h"
#include "sim/simulation.h"

namespace {

using namespace shoal::sim;

// The command line: SimOptions' own fields, and what is given in other
// units or by name.
struct SimFlags {
  SimOptions o;
  double size_mib = 0, piece_mib = 16, node_gbit = 0.1, origin_gbit = 0.4;  // cluster bench
  double origin_request_gbit = 0;
  std::string scenario = "cold", out, hand_on_owner = "only", log_level = "error";
  bool no_peers = false;
};

void AddSimFlags(CLI::App& app, SimFlags& f) {
  SimOptions& o = f.o;
  app.add_option("--nodes", o.nodes, "Nodes that pull the model")->capture_default_str();
  app.add_option("--chunks", o.chunks, "Pieces of the model (or --size-mib)")
      ->capture_default_str();
  app.add_option("--size-mib", f.size_mib, "Model size in MiB; sets --chunks from --piece-mib");
  app.add_option("--piece-mib", f.piece_mib, "Piece size in MiB")->capture_default_str();
  app.add_option("--node-gbit", f.node_gbit, "Each node's upload and download link, Gbit/s")
      ->capture_default_str();
  app.add_option("--origin-gbit", f.origin_gbit, "The origin's egress, Gbit/s")
      ->capture_default_str();
  app.add_option("--origin-request-gbit", f.origin_request_gbit,
                 "What one origin read (a GET) carries at most, Gbit/s; 0: no limit of its own")
      ->capture_default_str();
  app.add_option("--link-efficiency", o.link_efficiency,
                 "Share of --node-gbit a busy node link carries on average")
      ->capture_default_str();
  app.add_option("--origin-latency-ms", o.origin_latency_ms, "Per origin request, before data")
      ->capture_default_str();
  app.add_option("--scenario", f.scenario, "cold, staggered, kills or warm")->capture_default_str();
  app.add_option("--stagger-window-s", o.stagger_window_s,
                 "staggered: arrivals spread over this many seconds (0: T_LB / 2)");
  app.add_option("--kill-fraction", o.kill_fraction, "kills: share of nodes killed")
      ->capture_default_str();
  app.add_option("--kill-at-tlb", o.kill_at_tlb, "kills: when they die, in units of T_LB")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of every random choice")->capture_default_str();
  app.add_flag("--no-peers", f.no_peers,
               "No piece exchange nor tracker: every node reads the origin");
  app.add_option("--peers-wanted", o.peers_wanted, "Peers a node connects to when it joins")
      ->capture_default_str();
  app.add_option("--upload-slots", o.upload_slots, "Unchoked peers per node")
      ->capture_default_str();
  app.add_option("--download-slots", o.download_slots, "Pieces received from peers at once")
      ->capture_default_str();
  app.add_option("--pull-poll-ms", o.pull_poll_ms,
                 "How often the pulls look for chunks no peer offers, all at once")
      ->capture_default_str();
  app.add_option("--origin-budget", o.origin_budget, "Tracker: origin orders in flight")
      ->capture_default_str();
  app.add_option("--fetches-per-agent", o.fetches_per_agent,
                 "Tracker: origin orders per agent (at most, with --pace-fetches-per-agent)")
      ->capture_default_str();
  app.add_flag("--pace-fetches-per-agent", o.pace_fetches_per_agent,
               "Tracker: each agent starts at one order and runs more while more pay");
  app.add_option("--hand-on", o.hand_on,
                 "Next owners the tracker orders to copy a chunk just fetched, at once")
      ->capture_default_str();
  app.add_option("--hand-on-owner", f.hand_on_owner,
                 "How the owner serves them: none, first (its free slots) or only (the piece "
                 "to them alone until they hold it)")
      ->capture_default_str();
  app.add_option("--hand-on-weight", o.hand_on_weight,
                 "A hand-on flow's weight on both its links (1: an equal share)")
      ->capture_default_str();
  app.add_flag("--hand-on-connect,!--no-hand-on-connect", o.hand_on_connect,
               "A hand-on receiver not connected to the chunk's owner connects to it (the "
               "default)");
  app.add_option("--out", f.out, "Write the run as JSON to this file");
  app.add_option("--log-level", f.log_level,
                 "The tracker's log lines shown (debug, info, warn, error)")
      ->capture_default_str();
}

// The options the flags give, after the log level is set; the first flag
// that does not parse is the error.
shoal::Result<SimOptions> ApplySimFlags(const SimFlags& f) {
  shoal::Result<shoal::LogLevel> level = shoal::ParseLogLevel(f.log_level);
  if (!level.ok()) return level.status();
  shoal::Result<Scenario> scenario = ParseScenario(f.scenario);
  if (!scenario.ok()) return scenario.status();
  shoal::Result<HandOnOwner> hand_on_owner = ParseHandOnOwner(f.hand_on_owner);
  if (!hand_on_owner.ok()) return hand_on_owner.status();
  shoal::SetLogLevel(*level);
  SimOptions o = f.o;
  o.piece_bytes = static_cast<uint64_t>(std::llround(f.piece_mib * 1024 * 1024));
  if (f.size_mib > 0 && o.piece_bytes > 0)
    o.chunks = static_cast<uint32_t>(
        std::ceil(f.size_mib * 1024 * 1024 / static_cast<double>(o.piece_bytes)));
  o.node_bytes_per_s = f.node_gbit * 1e9 / 8;
  o.origin_bytes_per_s = f.origin_gbit * 1e9 / 8;
  o.origin_request_bytes_per_s = f.origin_request_gbit * 1e9 / 8;
  o.peers = !f.no_peers;
  o.scenario = *scenario;
  o.hand_on_owner = *hand_on_owner;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Simulates N nodes pulling one model through Shoal, on virtual time"};
  SimFlags f;
  AddSimFlags(app, f);
  CLI11_PARSE(app, argc, argv);
  shoal::Result<SimOptions> o = ApplySimFlags(f);
  shoal::Result<SimResult> r = o.ok() ? Simulate(*o) : shoal::Result<SimResult>(o.status());
  if (!r.ok()) {
    std::fprintf(stderr, "shoal-sim: %s\n", r.status().ToString().c_str());
    return 2;
  }
  const SimSummary summary = Summarize(*r);
  std::printf("%s\n", SummaryLine(*r, summary).c_str());
  if (!f.out.empty()) {
    shoal::Status w = WriteJson(*r, summary, f.out);
    if (!w.ok()) {
      std::fprintf(stderr, "shoal-sim: %s\n", w.ToString().c_str());
      return 1;
    }
  }
  return r->timed_out ? 1 : 0;
}
