#include "sim/sim_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace shoal::sim {
namespace {

// Linear interpolation between closest ranks (numpy's default), as the
// cluster benchmark computes its percentiles. REQUIRES: sorted, non-empty.
double Percentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(rank);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string List(const std::vector<double>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + Num(values[i]);
  return s + "]";
}

}  // namespace

SimSummary Summarize(const SimResult& r) {
  SimSummary s;
  s.t_lb_s = r.options.t_lb_s();
  std::vector<double> times;
  for (const NodeResult& n : r.nodes) {
    if (n.killed) continue;
    ++s.expected;
    if (n.done_s >= 0) times.push_back(n.done_s / s.t_lb_s);
  }
  s.done = times.size();
  std::sort(times.begin(), times.end());
  if (!times.empty()) {
    s.p50_tlb = Percentile(times, 50);
    s.p99_tlb = Percentile(times, 99);
    s.max_tlb = times.back();
  }
  const double model = static_cast<double>(r.options.model_bytes());
  s.origin_ratio = static_cast<double>(r.origin_bytes) / model;
  s.warm_origin_ratio = static_cast<double>(r.warm_origin_bytes) / model;
  return s;
}

std::string SummaryLine(const SimResult& r, const SimSummary& s) {
  char buf[512];
  const double cells = static_cast<double>(r.options.nodes) * r.options.chunks;
  std::snprintf(
      buf, sizeof buf,
      "%s N=%u chunks=%u%s: done %zu/%zu, p50 %.3f p99 %.3f max %.3f x T_LB (%.2f s), "
      "origin %.3f x model (%.3f cut short, %u chunks again)%s; %llu events in %.2f s (%.3g nodes "
      "x chunks/s)%s",
      ScenarioName(r.options.scenario), r.options.nodes, r.options.chunks,
      r.options.hand_on > 0
          ? (" hand-on " + std::to_string(r.options.hand_on) + " (" +
             HandOnOwnerName(r.options.hand_on_owner) + ", weight " +
             Num(r.options.hand_on_weight) + (r.options.hand_on_connect ? ", connect" : "") + ")")
                .c_str()
          : "",
      s.done, s.expected, s.p50_tlb, s.p99_tlb, s.max_tlb, s.t_lb_s, s.origin_ratio,
      static_cast<double>(r.origin_cut_bytes) / static_cast<double>(r.options.model_bytes()),
      r.chunks_refetched,
      r.options.scenario == Scenario::kWarm
          ? (" (warm " + Num(s.warm_origin_ratio) + " in " + Num(r.warm_s) + " s)").c_str()
          : "",
      static_cast<unsigned long long>(r.events), r.wall_s, r.wall_s > 0 ? cells / r.wall_s : 0.0,
      r.timed_out ? " TIMED OUT" : "");
  return buf;
}

std::string ToJson(const SimResult& r, const SimSummary& s) {
  const SimOptions& o = r.options;
  std::ostringstream j;
  j << "{\n  \"options\": {\"scenario\": \"" << ScenarioName(o.scenario)
    << "\", \"nodes\": " << o.nodes << ", \"chunks\": " << o.chunks
    << ", \"piece_bytes\": " << o.piece_bytes << ", \"model_bytes\": " << o.model_bytes()
    << ", \"node_gbit\": " << Num(o.node_bytes_per_s * 8 / 1e9)
    << ", \"origin_gbit\": " << Num(o.origin_bytes_per_s * 8 / 1e9)
    << ", \"link_efficiency\": " << Num(o.link_efficiency)
    << ", \"origin_latency_ms\": " << Num(o.origin_latency_ms)
    << ", \"peers\": " << (o.peers ? "true" : "false") << ", \"peers_wanted\": " << o.peers_wanted
    << ", \"upload_slots\": " << o.upload_slots << ", \"download_slots\": " << o.download_slots
    << ", \"origin_budget\": " << o.origin_budget
    << ", \"fetches_per_agent\": " << o.fetches_per_agent
    << ", \"pace_fetches_per_agent\": " << (o.pace_fetches_per_agent ? "true" : "false")
    << ", \"origin_request_bytes_per_s\": " << o.origin_request_bytes_per_s
    << ", \"hand_on\": " << o.hand_on << ", \"hand_on_owner\": \""
    << HandOnOwnerName(o.hand_on_owner) << "\""
    << ", \"hand_on_weight\": " << Num(o.hand_on_weight)
    << ", \"hand_on_connect\": " << (o.hand_on_connect ? "true" : "false")
    << ", \"seed\": " << o.seed << "},\n";
  j << "  \"summary\": {\"t_lb_s\": " << Num(s.t_lb_s) << ", \"expected\": " << s.expected
    << ", \"done\": " << s.done << ", \"p50_tlb\": " << Num(s.p50_tlb)
    << ", \"p99_tlb\": " << Num(s.p99_tlb) << ", \"max_tlb\": " << Num(s.max_tlb)
    << ", \"origin_egress_ratio\": " << Num(s.origin_ratio)
    << ", \"warm_origin_egress_ratio\": " << Num(s.warm_origin_ratio) << "},\n";
  j << "  \"origin_bytes\": " << r.origin_bytes << ", \"origin_cut_bytes\": " << r.origin_cut_bytes
    << ", \"chunks_refetched\": " << r.chunks_refetched
    << ", \"second_copy_p50_s\": " << Num(r.second_copy_p50_s)
    << ", \"second_copy_max_s\": " << Num(r.second_copy_max_s)
    << ", \"warm_origin_bytes\": " << r.warm_origin_bytes << ", \"warm_s\": " << Num(r.warm_s)
    << ", \"origin_deciles_s\": " << List(r.origin_deciles_s)
    << ", \"peer_bytes\": " << r.peer_bytes << ", \"fetch_orders\": " << r.fetch_orders
    << ", \"takeovers\": " << r.takeovers << ", \"hand_on_orders\": " << r.hand_on_orders
    << ", \"end_s\": " << Num(r.end_s) << ", \"timed_out\": " << (r.timed_out ? "true" : "false")
    << ",\n  \"sim\": {\"events\": " << r.events << ", \"wall_s\": " << Num(r.wall_s) << "},\n";
  j << "  \"nodes\": [";
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeResult& n = r.nodes[i];
    j << (i ? ",\n    " : "\n    ") << "{\"node\": " << i << ", \"start_s\": " << Num(n.start_s)
      << ", \"done_s\": " << (n.done_s >= 0 ? Num(n.done_s) : "null")
      << ", \"killed\": " << (n.killed ? "true" : "false")
      << ", \"origin_bytes\": " << n.origin_bytes << ", \"deciles_s\": " << List(n.deciles_s)
      << "}";
  }
  j << "\n  ]\n}\n";
  return j.str();
}

Status WriteJson(const SimResult& r, const SimSummary& s, const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  out << ToJson(r, s);
  out.close();
  if (!out)
    return Status::IOError("cannot write " + path + ": check the folder exists and is writable");
  return Status::OK();
}

}  // namespace shoal::sim
