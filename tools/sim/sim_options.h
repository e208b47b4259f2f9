// SimOptions: what one simulated run of Shoal is made of (cluster, model,
// links, scenario) and how the simulator models what it cannot link.
//
// Units are in the field names: bytes, bytes per second, milliseconds,
// seconds of virtual time. The CLI (sim_main.cpp) sets them from flags of
// the same names (in Gbit/s and MiB where a user thinks in those).
#ifndef SHOAL_TOOLS_SIM_SIM_OPTIONS_H_
#define SHOAL_TOOLS_SIM_SIM_OPTIONS_H_

#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal::sim {

enum class Scenario {
  kCold,       // all nodes register and pull at t = 0
  kStaggered,  // node i registers and pulls at i * stagger_window_s / (N - 1)
  kKills,      // as cold; round(kill_fraction * N) nodes die at kill_at_tlb * T_LB
  kWarm,       // the tracker warms every chunk on its owner, then all pull at once
};

// "cold", "staggered", "kills" or "warm"; InvalidArgument otherwise.
Result<Scenario> ParseScenario(const std::string& name);
const char* ScenarioName(Scenario s);

// How the owner of a chunk it just fetched from the origin serves the
// `hand_on` receivers the tracker named for it (piece_swarm.h).
enum class HandOnOwner {
  kNone,   // as any piece: the receivers' deadline alone gets it to them
  kFirst,  // its free upload slots go to the receivers before other peers
  kOnly,   // as kFirst, and no other peer gets that piece from it until they hold it
};

// "none", "first" or "only"; InvalidArgument otherwise.
Result<HandOnOwner> ParseHandOnOwner(const std::string& name);
const char* HandOnOwnerName(HandOnOwner h);

struct SimOptions {
  // The cluster and the model.
  uint32_t nodes = 8;                  // agents, each pulling the whole model
  uint32_t chunks = 64;                // pieces of the model
  uint64_t piece_bytes = 16ull << 20;  // bytes per piece (Shoal's default 16 MiB)
  // Links.
  // The defaults are the cluster benchmark's (docs/cluster-bench.md).
  double node_bytes_per_s = 100e6 / 8;    // each node's upload and download link
  double origin_bytes_per_s = 400e6 / 8;  // the origin's total egress
  double origin_latency_ms = 20;          // per request, before the first byte
  // Share of node_bytes_per_s a node link carries in payload while it has
  // work: the cluster benchmark's nodes received at 0.94 to 0.95 of B on
  // the wire, headers included, in the warm pulls of docs/scale.md's
  // "Validation". T_LB stays model / node_bytes_per_s. 1: ideal links.
  double link_efficiency = 0.94;
  // Scenario.
  Scenario scenario = Scenario::kCold;
  double stagger_window_s = 0;  // kStaggered: 0 means T_LB / 2, as the cluster benchmark
  double kill_fraction = 0.2;   // kKills: share of nodes killed
  double kill_at_tlb = 0.4;     // kKills: when, in units of T_LB
  uint64_t seed = 1;            // node choice for kills, peer choice, piece ties
  // Modelled agent behaviour.
  bool peers = true;  // false: no piece exchange and no tracker; every node reads the origin
  uint32_t peers_wanted = 50;    // peers a node connects to when it joins (announce numwant)
  uint32_t max_peers = 500;      // connections one node accepts in all
  uint32_t upload_slots = 5;     // unchoked peers per node (4 + 1 optimistic)
  uint32_t download_slots = 5;   // pieces one node receives from peers at once (docs/scale.md)
  double pull_poll_ms = 500;     // how often a pull looks for chunks no peer offers
  double tracker_tick_ms = 250;  // FetchScheduler::Tick period, as in the tracker
  double heartbeat_ms = 2000;    // agents' heartbeats, with their origin bytes read so far
  // Hand-on of fresh chunks: once an owner delivers a chunk, the tracker
  // orders its next `hand_on` owners on the ring to copy it from the swarm
  // (FetchPolicy::replicas = hand_on + 1), and each asks for that piece at
  // once, before any other (set_piece_deadline). 0: no such orders.
  uint32_t hand_on = 0;
  HandOnOwner hand_on_owner = HandOnOwner::kOnly;  // with hand_on > 0
  double hand_on_weight = 1;    // a hand-on flow's share of both its links against other flows
  bool hand_on_connect = true;  // a receiver not connected to the owner connects to it
  // Tracker (FetchPolicy).
  uint32_t origin_budget = 64;            // origin fetch orders in flight across the cluster
  uint32_t fetches_per_agent = 2;         // of those, per agent (at most, with pacing)
  bool pace_fetches_per_agent = false;    // each agent from 1 up to fetches_per_agent (OrderPacer)
  double origin_request_bytes_per_s = 0;  // one origin read's own limit (a GET stream); 0: none
  // Safety stop, in units of T_LB of virtual time.
  double max_tlb = 200;

  uint64_t model_bytes() const { return static_cast<uint64_t>(chunks) * piece_bytes; }
  // T_LB = model size / node bandwidth: the time one node needs at best.
  double t_lb_s() const { return static_cast<double>(model_bytes()) / node_bytes_per_s; }

  Status Validate() const;
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_SIM_OPTIONS_H_
