// Simulate: one discrete-event run of Shoal's pull of one model by N nodes.
//
// Linked, not copied: the tracker's FetchScheduler (orders of origin
// fetches to chunk owners, budgets, takeovers), the HashRing it places
// chunks with, the AgentDirectory it follows, and MissingChunkPolicy for
// each node's decision about a chunk no peer offers (wait, ask the tracker,
// or fetch it itself). They run on a kj event loop, on virtual time.
//
// Modelled (see flow_network.h and piece_swarm.h): links and their fair
// shares (node links at SimOptions::link_efficiency of their rate), the
// origin's bandwidth and request latency, piece exchange with
// rarest-first and bounded unchoke slots, arrivals and kills, and the
// hand-on of fresh chunks to their next owners (SimOptions::hand_on).
//
// Thread-safety: each call runs its own simulation; calls on different
// threads do not share state.
#ifndef SHOAL_TOOLS_SIM_SIMULATION_H_
#define SHOAL_TOOLS_SIM_SIMULATION_H_

#include <cstdint>
#include <vector>

#include "shoal/status.h"
#include "sim/sim_options.h"

namespace shoal::sim {

struct NodeResult {
  double start_s = 0;         // when its pull started (virtual seconds)
  double done_s = -1;         // pull time from its start; -1 if it never completed
  bool killed = false;        // died during the run (kKills)
  uint64_t origin_bytes = 0;  // read from the origin, during the pulls
  // deciles_s[k]: seconds from its start until it had received (k + 1) / 10
  // of what it lacked then (partial pieces included), as far as it got: the
  // benchmark's per-node timelines, from samples as often.
  std::vector<double> deciles_s;
};

struct SimResult {
  SimOptions options;
  std::vector<NodeResult> nodes;
  uint64_t origin_bytes = 0;       // origin egress during the pulls (partial reads included)
  uint64_t origin_cut_bytes = 0;   // of those, partial reads a kill cut short
  double second_copy_p50_s = 0;    // from a chunk's first origin read to a second node holding it:
  double second_copy_max_s = 0;    // median and longest over the chunks
  uint32_t chunks_refetched = 0;   // chunks the pulls read whole from the origin more than once
  uint64_t warm_origin_bytes = 0;  // kWarm: origin egress of the warm itself
  double warm_s = 0;               // kWarm: how long the warm took
  uint64_t peer_bytes = 0;         // pieces moved between peers
  // origin_deciles_s[k]: seconds from the first pull's start until the
  // origin had sent (k + 1) / 10 of the model, during the pulls.
  std::vector<double> origin_deciles_s;
  uint64_t fetch_orders = 0;    // the tracker's fetch orders
  uint64_t takeovers = 0;       // orders handed to a chunk's next owner
  uint64_t hand_on_orders = 0;  // the tracker's replica orders: hand-ons of fresh chunks
  double end_s = 0;             // virtual time at the end
  bool timed_out = false;       // stopped at max_tlb before every live node completed
  uint64_t events = 0;          // events handled, flow completions included
  double wall_s = 0;            // real seconds the run took
};

// Runs the scenario of `options`. InvalidArgument if the options are.
Result<SimResult> Simulate(const SimOptions& options);

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_SIMULATION_H_
