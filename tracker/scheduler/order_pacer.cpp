#include "scheduler/order_pacer.h"

#include <algorithm>

namespace shoal::tracker {

void OrderPacer::Advance(Agent& a, int64_t now_ms) {
  if (now_ms > a.changed_ms) a.busy += static_cast<double>(a.running) * (now_ms - a.changed_ms);
  a.changed_ms = std::max(a.changed_ms, now_ms);
}

int OrderPacer::Cap(const std::string& agent) const {
  auto it = agents_.find(agent);
  return it == agents_.end() ? 1 : it->second.cap;
}

OrderPacer::Ticket OrderPacer::Start(const std::string& agent, int64_t now_ms) {
  Agent& a = agents_[agent];
  Advance(a, now_ms);
  ++a.running;
  return Ticket{now_ms, a.busy};
}

OrderPacer::Finished OrderPacer::Done(const std::string& agent, const Ticket& ticket,
                                      int64_t now_ms, bool fetched, uint64_t bytes) {
  auto it = agents_.find(agent);
  if (it == agents_.end()) return Finished{};
  Agent& a = it->second;
  const int cap_before = a.cap;
  Advance(a, now_ms);
  const int64_t ms = now_ms - ticket.start_ms;
  // How many of the agent's orders ran, on average, while this one did.
  const double beside =
      ms > 0 ? std::max(1.0, (a.busy - ticket.busy_at_start) / static_cast<double>(ms)) : 1;
  a.running = std::max(0, a.running - 1);
  const bool timed = fetched && bytes >= kMinTimedBytes && ms > 0;
  const double rate = timed ? static_cast<double>(bytes) / static_cast<double>(ms) : 0;
  if (fetched && beside < 1.5) {
    if (timed) a.alone_rate = a.alone_rate > 0 ? (a.alone_rate + rate) / 2 : rate;
    if (a.cap < max_ && now_ms >= a.no_rise_until_ms) ++a.cap;  // try one more
  } else if (timed && a.alone_rate > 0) {
    const double gain = rate * beside / a.alone_rate;  // the agent's rate, against alone
    if (gain >= 1 + (beside - 1) / 2) {
      // Concurrency paid; one more, if the cap was in use.
      if (a.cap < max_ && beside >= a.cap - 0.5 && now_ms >= a.no_rise_until_ms) ++a.cap;
    } else if (gain < 1 + (beside - 1) / 5) {
      a.cap = std::max(1, a.cap - 1);
      a.no_rise_until_ms = now_ms + kRetryMs;
    }
  }
  const int cap = a.cap;
  if (a.running == 0 && agents_.size() > kMaxAgents) agents_.erase(it);
  return Finished{cap != cap_before ? cap : 0, beside};
}

}  // namespace shoal::tracker
