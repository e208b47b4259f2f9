// tracker_load's measurements: the trackers' CPU and memory from /proc,
// their event loop lag from /metrics, percentiles of the timed requests;
// and the report: the workers' statistics merged and printed as JSON.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "perf/tracker_load.h"

namespace shoal::tracker_load {
namespace {

// VmRSS of `pid` in KiB.
long RssKib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

// The upper bound of the bucket holding quantile q of the observations
// between two scrapes (the histogram's resolution, not interpolated).
double BucketQuantile(const std::map<double, double>& before, const std::map<double, double>& after,
                      double q) {
  if (after.empty()) return NAN;
  const double total = after.rbegin()->second - (before.empty() ? 0 : before.rbegin()->second);
  for (const auto& [bound, count] : after) {
    auto b = before.find(bound);
    if (count - (b == before.end() ? 0 : b->second) >= q * total) return bound;
  }
  return INFINITY;
}

double Percentile(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// Prints each phase's rates and latencies (not the "after" phase's);
// returns how many requests the tracker answered in the steady window.
uint64_t PrintPhases(Stats& all, double ramp_ms, double steady_s) {
  uint64_t steady_requests = 0;
  const char* phases[3] = {"ramp", "steady", "after"};
  for (int p = 0; p < 2; ++p) {
    std::printf(" \"%s\": {", phases[p]);
    const double secs = p == 0 ? ramp_ms / 1000 : steady_s;
    for (int t = 0; t < kTypes; ++t) {
      auto& v = all.ms[p][t];
      if (p == 1 && t != kFetchOrder) steady_requests += v.size();
      std::printf(
          "%s\"%s\": {\"count\": %zu, \"per_s\": %.1f, \"errors\": %llu, \"p50_ms\": %.3f, "
          "\"p99_ms\": %.3f, \"max_ms\": %.3f}",
          t ? ", " : "", kTypeNames[t], v.size(), static_cast<double>(v.size()) / secs,
          static_cast<unsigned long long>(all.errors[p][t]), Percentile(v, 0.5),
          Percentile(v, 0.99), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
    }
    // Every request the tracker answered (not the fetch orders it sent).
    std::vector<float> every;
    for (int t = 0; t < kTypes; ++t)
      if (t != kFetchOrder) every.insert(every.end(), all.ms[p][t].begin(), all.ms[p][t].end());
    std::printf(
        ", \"all\": {\"count\": %zu, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f}",
        every.size(), Percentile(every, 0.5), Percentile(every, 0.99), Percentile(every, 0.999));
    const size_t beats = all.ms[p][kHeartbeat].size();
    std::printf(
        ", \"entries_per_s\": %.1f, \"ring_members_per_s\": %.1f, "
        "\"heartbeats_following_share\": %.3f},\n",
        static_cast<double>(all.entries[p]) / secs, static_cast<double>(all.ring_members[p]) / secs,
        beats > 0 ? static_cast<double>(all.beats_following[p]) / static_cast<double>(beats) : 0.0);
  }
  return steady_requests;
}

// The probe's latencies, then the generator's and the trackers' loop lag.
void PrintLatencies(const Options& o, Stats& all, Stats& probe, const Measured& m) {
  const std::map<double, double>& lag_before = m.lag_before;
  const std::map<double, double>& lag_after = m.lag_after;
  std::vector<float> probe_all;
  for (int t = 0; t < kTypes; ++t) {
    if (t != kFetchOrder)
      probe_all.insert(probe_all.end(), probe.ms[1][t].begin(), probe.ms[1][t].end());
  }
  std::printf(
      " \"probe\": {\"agents\": %d, \"count\": %zu, \"errors\": %llu, \"p50_ms\": %.3f, "
      "\"p99_ms\": %.3f, \"p999_ms\": %.3f, \"max_ms\": %.3f, \"loop_lag_p99_ms\": %.3f},\n",
      o.probe_agents, probe_all.size(),
      static_cast<unsigned long long>(probe.errors[1][kHeartbeat] + probe.errors[1][kAnnounce]),
      Percentile(probe_all, 0.5), Percentile(probe_all, 0.99), Percentile(probe_all, 0.999),
      probe_all.empty() ? 0.0 : *std::max_element(probe_all.begin(), probe_all.end()),
      Percentile(probe.loop_lag_ms[1], 0.99));
  std::vector<float>& gen_lag = all.loop_lag_ms[1];
  std::printf(" \"generator_loop_lag\": {\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f},\n",
              Percentile(gen_lag, 0.5), Percentile(gen_lag, 0.99), Percentile(gen_lag, 0.999));
  // JSON has no infinity or NaN: -1 for "past the last bucket" or "not read".
  auto ms_or_none = [](double s) { return std::isfinite(s) ? s * 1000 : -1.0; };
  std::printf(
      " \"tracker_loop_lag\": {\"p50_ms_at_most\": %.3f, \"p99_ms_at_most\": %.3f, "
      "\"p999_ms_at_most\": %.3f},\n",
      ms_or_none(BucketQuantile(lag_before, lag_after, 0.5)),
      ms_or_none(BucketQuantile(lag_before, lag_after, 0.99)),
      ms_or_none(BucketQuantile(lag_before, lag_after, 0.999)));
}

}  // namespace

// utime + stime of `pid` in seconds.
double CpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SumCpu(const std::vector<int>& pids) {
  double s = 0;
  for (int p : pids) s += CpuSeconds(p);
  return s;
}
long SumRss(const std::vector<int>& pids) {
  long s = 0;
  for (int p : pids) s += RssKib(p);
  return s;
}

// GET http://ADDRESS/metrics, plainly; "" when it fails.
std::string FetchMetrics(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return "";
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return "";
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: " + address + "\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

// The cumulative bucket counts of one histogram in exposition text, by
// upper bound (+Inf as infinity), summed over several texts.
std::map<double, double> HistogramBuckets(const std::vector<std::string>& texts,
                                          const std::string& name) {
  std::map<double, double> buckets;
  const std::string prefix = name + "_bucket{le=\"";
  for (const std::string& text : texts) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) != 0) continue;
      const size_t end = line.find('"', prefix.size());
      const std::string le = line.substr(prefix.size(), end - prefix.size());
      const double bound = le == "+Inf" ? INFINITY : std::stod(le);
      buckets[bound] += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return buckets;
}

Stats Merge(std::vector<std::unique_ptr<Worker>>& workers) {
  Stats all;
  for (auto& w : workers) {
    Stats& s = w->stats();
    for (int p = 0; p < 3; ++p) {
      for (int t = 0; t < kTypes; ++t) {
        all.ms[p][t].insert(all.ms[p][t].end(), s.ms[p][t].begin(), s.ms[p][t].end());
        all.errors[p][t] += s.errors[p][t];
      }
      all.entries[p] += s.entries[p];
      all.loop_lag_ms[p].insert(all.loop_lag_ms[p].end(), s.loop_lag_ms[p].begin(),
                                s.loop_lag_ms[p].end());
      all.ring_members[p] += s.ring_members[p];
      all.beats_following[p] += s.beats_following[p];
    }
    all.slow.insert(all.slow.end(), s.slow.begin(), s.slow.end());
    all.churned += s.churned;
    all.told_ms = std::max(all.told_ms, s.told_ms);
    all.unexpected_drops += s.unexpected_drops;
    if (!s.last_error.empty()) all.last_error = s.last_error;
    for (const auto& [k, n] : s.error_kinds) all.error_kinds[k] += n;
  }
  return all;
}

void PrintSlow(const Stats& all, const Stats& probe) {
  auto slow = all.slow;
  for (auto x : probe.slow) slow.push_back({x.sent_ms, -1 - x.type, x.ms});
  std::sort(slow.begin(), slow.end(),
            [](const Stats::Slow& a, const Stats::Slow& b) { return a.sent_ms < b.sent_ms; });
  for (const auto& x : slow) {
    const int t = x.type < 0 ? -1 - x.type : x.type;
    // `at`: CLOCK_MONOTONIC seconds, as `perf record -k CLOCK_MONOTONIC` stamps samples.
    const double at =
        std::chrono::duration<double>(kProcessStart.time_since_epoch()).count() + x.sent_ms / 1000;
    std::fprintf(stderr, "slow: sent %.1f ms %s%s %.1f ms at %.3f\n", x.sent_ms,
                 x.type < 0 ? "probe " : "", kTypeNames[t], x.ms, at);
  }
}

void PrintReport(const Shared& shared, Stats& all, Stats& probe, const Measured& m) {
  const Options& o = shared.o;
  const double ramp_ms = m.ramp_ms, steady_s = m.steady_s;
  const double tracker_cpu = m.tracker_cpu, self_cpu = m.self_cpu;
  const long rss_before = m.rss_before, rss_after = m.rss_after;
  for (char& ch : all.last_error)
    if (ch == '"' || ch == '\\' || ch == '\n') ch = ' ';
  std::printf("{\"agents\": %d, \"threads\": %d, \"trackers\": %zu, \"torrents\": %zu,\n", o.agents,
              o.threads, o.trackers.size(), shared.hashes.size());
  std::printf(" \"ramp_s\": %.2f, \"steady_s\": %.2f,\n", ramp_ms / 1000, steady_s);
  const uint64_t steady_requests = PrintPhases(all, ramp_ms, steady_s);
  std::printf(" \"steady_requests_per_s\": %.1f,\n",
              static_cast<double>(steady_requests) / steady_s);
  std::printf(" \"tracker_cpu_s\": %.2f, \"tracker_cores\": %.3f, \"requests_per_core_s\": %.0f,\n",
              tracker_cpu, tracker_cpu / steady_s,
              tracker_cpu > 0 ? static_cast<double>(steady_requests) / tracker_cpu : 0.0);
  std::printf(" \"generator_cpu_s\": %.2f, \"generator_cores\": %.3f,\n", self_cpu,
              self_cpu / steady_s);
  std::printf(
      " \"tracker_rss_before_kib\": %ld, \"tracker_rss_after_kib\": %ld, "
      "\"rss_per_agent_kib\": %.1f,\n",
      rss_before, rss_after, static_cast<double>(rss_after - rss_before) / o.agents);
  PrintLatencies(o, all, probe, m);
  std::printf(" \"dead_agent_dropped_ms\": %.0f, \"dead_agent_off_ring_ms\": %.0f,\n",
              shared.dropped_ms.load(), shared.ring_gone_ms.load());
  std::printf(" \"heartbeat_told_ms\": %u,\n", all.told_ms);
  std::printf(" \"error_kinds\": {");
  bool first = true;
  for (const auto& [kind, n] : all.error_kinds) {
    std::string k = kind;
    for (char& ch : k)
      if (ch == '"' || ch == '\\' || ch == '\n') ch = ' ';
    std::printf("%s\"%s\": %llu", first ? "" : ", ", k.c_str(), static_cast<unsigned long long>(n));
    first = false;
  }
  std::printf("},\n");
  std::printf(" \"churned\": %llu, \"unexpected_drops\": %llu, \"last_error\": \"%s\"}\n",
              static_cast<unsigned long long>(all.churned),
              static_cast<unsigned long long>(all.unexpected_drops), all.last_error.c_str());
}

}  // namespace shoal::tracker_load
