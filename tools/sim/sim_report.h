// The figures the cluster benchmark reports (docs/cluster-bench.md), from a
// simulated run: per-node completion time ÷ T_LB (p50, p99, max; linear
// interpolation as the benchmark) and origin egress ÷ model size; and the
// run written as JSON.
#ifndef SHOAL_TOOLS_SIM_SIM_REPORT_H_
#define SHOAL_TOOLS_SIM_SIM_REPORT_H_

#include <cstddef>
#include <string>

#include "shoal/status.h"
#include "sim/simulation.h"

namespace shoal::sim {

struct SimSummary {
  double t_lb_s = 0;                             // model size / node bandwidth
  size_t expected = 0;                           // nodes that should complete: not killed
  size_t done = 0;                               // ... and did
  double p50_tlb = 0, p99_tlb = 0, max_tlb = 0;  // over the nodes that completed
  double origin_ratio = 0;                       // origin egress during the pulls ÷ model size
  double warm_origin_ratio = 0;                  // kWarm: the warm's origin egress ÷ model size
};

SimSummary Summarize(const SimResult& r);

// One line for a terminal: scenario, N, done, p50/p99 ÷ T_LB, origin ratio,
// and how fast the simulation ran.
std::string SummaryLine(const SimResult& r, const SimSummary& s);

// The options, the summary and every node's figures, as one JSON object.
std::string ToJson(const SimResult& r, const SimSummary& s);
// ToJson to `path`; IOError if it cannot be written.
Status WriteJson(const SimResult& r, const SimSummary& s, const std::string& path);

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_SIM_REPORT_H_
