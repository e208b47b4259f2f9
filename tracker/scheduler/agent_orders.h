// AgentOrders: the orders the tracker sends to live agents over their
// control connections. The fetch scheduler and warm see agents only
// through it; AgentControls (agent_controls.h) sends them over Cap'n Proto,
// and a test or simulator may answer them in memory.
//
// Thread-safety: as the implementation says; the fetch scheduler calls it
// from its own loop, and the promises resolve on the loop that called.
#ifndef SHOAL_TRACKER_AGENT_ORDERS_H_
#define SHOAL_TRACKER_AGENT_ORDERS_H_

#include <kj/async.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "scheduler/fetch_target.h"
#include "shoal/chunk_id.h"

namespace shoal::tracker {

// What an agent reports after a fetch order.
struct FetchOutcome {
  uint32_t fetched = 0;  // chunks it read from the origin (0: it held them already)
  uint64_t bytes = 0;    // bytes it read from the origin
};

class AgentOrders {
 public:
  virtual ~AgentOrders() = default;

  // True if orders can be sent to `agent` now.
  virtual bool Connected(const std::string& agent) const = 0;
  // How many agents orders can be sent to; changes when one connects or drops.
  virtual size_t connected() const = 0;

  // The orders below go to a connected agent; sending to another is a
  // programming error. Each promise rejects if the agent reports an error or
  // its connection drops before it answers.

  // Fetch `chunk` of `target` from the origin and keep it as owned.
  // `takeover`: an earlier owner failed or ran late with it.
  virtual kj::Promise<FetchOutcome> Fetch(const std::string& agent, const FetchTarget& target,
                                          const ChunkId& chunk, bool takeover) = 0;
  // Copy `chunk` of `target` from the swarm (never the origin) and keep it
  // as owned.
  virtual kj::Promise<void> Replicate(const std::string& agent, const FetchTarget& target,
                                      const ChunkId& chunk) = 0;
  // Pull every file of `target` into the agent's cache.
  virtual kj::Promise<void> Prefetch(const std::string& agent, const FetchTarget& target) = 0;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_AGENT_ORDERS_H_
