// AgentControls: each registered agent's AgentControl capability, keyed by
// agent id, and the orders sent over it (AgentOrders). An agent's session
// attaches its capability when the agent registers and detaches it when its
// connection closes.
//
// Thread-safety: the RPC event loop's thread only.
#ifndef SHOAL_TRACKER_AGENT_CONTROLS_H_
#define SHOAL_TRACKER_AGENT_CONTROLS_H_

#include <map>
#include <string>

#include "agent_orders.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {

class AgentControls final : public AgentOrders {
 public:
  // Replaces any capability `agent` had.
  // The control of `agent`'s registration `session`, replacing any older one.
  void Attach(const std::string& agent, uint64_t session, proto::AgentControl::Client control);
  // Drops it, unless the agent has registered again since.
  void Detach(const std::string& agent, uint64_t session);

  bool Connected(const std::string& agent) const override;
  size_t connected() const override { return controls_.size(); }
  kj::Promise<FetchOutcome> Fetch(const std::string& agent, const FetchTarget& target,
                                  const ChunkId& chunk, bool takeover) override;
  kj::Promise<void> Replicate(const std::string& agent, const FetchTarget& target,
                              const ChunkId& chunk) override;
  kj::Promise<void> Prefetch(const std::string& agent, const FetchTarget& target) override;

 private:
  // Each in a kj::Own: a Client's copy constructor takes a non-const
  // reference, which clang refuses in a std::map's value pair.
  std::map<std::string, kj::Own<proto::AgentControl::Client>> controls_;
  std::map<std::string, uint64_t> sessions_;  // the session each control came with
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_AGENT_CONTROLS_H_
