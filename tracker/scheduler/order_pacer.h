// OrderPacer: how many origin fetch orders each agent may run at once,
// learned from how its orders went.
//
// Two orders on one agent help when a single read from the origin cannot
// fill the agent's link (an object store serves one GET at a fraction of a
// fast NIC, and the first byte takes a round trip): together they finish
// in about the time one takes. They hurt when the agent's link, or its
// share of the origin, is already full: both then finish at half speed,
// and neither chunk exists whole (nor can be shared) until twice as late.
// The cluster benchmark's nodes are of the second kind; a 25 Gbit/s node
// reading 16 MiB chunks from S3 is of the first.
//
// So each agent starts at one order, and its cap moves by what its own
// orders measure. An order that fetched and ran alone lets the cap rise by
// one, to try; if it was timed (at least kMinTimedBytes) it also sets the
// agent's alone rate (bytes per ms, averaged). Small chunks wait mostly
// for the origin's first byte, so they climb to the maximum. An order that ran beside others (k on
// average over its life) compares its rate times k with the alone rate: if the agent moved at least
// 1 + (k - 1) / 2 times as much, concurrency pays and the cap may rise again, up to
// `max_per_agent`; if less than 1 + (k - 1) / 5 times, it does not, the cap falls by one, and no
// rise is tried for kRetryMs. In between it stays.
//
// Thread-safety: none; lives with the FetchScheduler on its loop.
#ifndef SHOAL_TRACKER_ORDER_PACER_H_
#define SHOAL_TRACKER_ORDER_PACER_H_

#include <cstdint>
#include <string>
#include <unordered_map>

namespace shoal::tracker {

class OrderPacer {
 public:
  static constexpr uint64_t kMinTimedBytes = 1 << 20;  // smaller orders teach nothing
  static constexpr int64_t kRetryMs = 30000;           // after a cut, before trying more

  // What an order's start recorded, for Done.
  struct Ticket {
    int64_t start_ms = 0;
    double busy_at_start = 0;  // the agent's order-milliseconds until then
  };

  // REQUIRES: max_per_agent >= 1.
  explicit OrderPacer(int max_per_agent) : max_(max_per_agent < 1 ? 1 : max_per_agent) {}

  // How many orders `agent` may have in flight now.
  int Cap(const std::string& agent) const;
  // An order starts on `agent`.
  Ticket Start(const std::string& agent, int64_t now_ms);
  // What Done measured.
  struct Finished {
    int new_cap = 0;    // the agent's cap if this order changed it, else 0
    double beside = 1;  // the agent's orders running on average over this one's life (itself too)
  };
  // It ended. `fetched`: it read the chunk from the origin, `bytes` of it;
  // an order that failed or found the chunk already there teaches nothing.
  Finished Done(const std::string& agent, const Ticket& ticket, int64_t now_ms, bool fetched,
                uint64_t bytes);

  // Agents with state kept. Past kMaxAgents, an agent's state is dropped
  // when its last order ends (it starts again at one).
  size_t agents() const { return agents_.size(); }
  static constexpr size_t kMaxAgents = 1 << 16;

 private:
  struct Agent {
    int cap = 1;
    int running = 0;
    double busy = 0;         // integral of `running` over time, in order-ms
    int64_t changed_ms = 0;  // when `running` last changed
    double alone_rate = 0;   // bytes per ms of an order alone; 0: not measured yet
    int64_t no_rise_until_ms = 0;
  };
  // Brings `a.busy` up to `now_ms`.
  static void Advance(Agent& a, int64_t now_ms);

  const int max_;
  std::unordered_map<std::string, Agent> agents_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ORDER_PACER_H_
