// AgentControls: each registered agent's AgentControl capability, keyed by
// agent id, and the orders sent over it (AgentOrders). An agent's session
// attaches its capability when the agent registers and detaches it when its
// connection closes.
//
// Thread-safety: safe for concurrent use. A capability belongs to the event
// loop of the connection it came on: Attach and Detach run on that loop's
// thread, and each order is carried there (kj::Executor) and sent from it.
// An order's promise resolves on the loop that gave it.
#ifndef SHOAL_TRACKER_AGENT_CONTROLS_H_
#define SHOAL_TRACKER_AGENT_CONTROLS_H_

#include <kj/async.h>

#include <map>
#include <mutex>
#include <string>

#include "scheduler/agent_orders.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {

class AgentControls final : public AgentOrders {
 public:
  // The control of `agent`'s registration `session`, replacing any older
  // one. Called on the thread of the event loop `control` belongs to.
  void Attach(const std::string& agent, uint64_t session, proto::AgentControl::Client control);
  // Drops it, unless the agent has registered again since. Called on the
  // same thread as its Attach.
  void Detach(const std::string& agent, uint64_t session);

  bool Connected(const std::string& agent) const override;
  size_t connected() const override;
  kj::Promise<FetchOutcome> Fetch(const std::string& agent, const FetchTarget& target,
                                  const ChunkId& chunk, bool takeover) override;
  kj::Promise<void> Replicate(const std::string& agent, const FetchTarget& target,
                              const ChunkId& chunk) override;
  kj::Promise<void> Prefetch(const std::string& agent, const FetchTarget& target) override;

 private:
  struct Control {
    uint64_t session = 0;
    kj::Own<const kj::Executor> loop;  // the loop the capability belongs to
    // Copied, used and dropped only on `loop`'s thread. In a kj::Own: a
    // Client's copy constructor takes a non-const reference.
    kj::Own<proto::AgentControl::Client> client;
  };

  // Runs `send(client)` on the loop of `agent`'s current control, if it is
  // still the registration `session` when it gets there; the result comes
  // back to the calling loop.
  template <typename T, typename Send>
  kj::Promise<T> OnControlLoop(const std::string& agent, Send send);

  mutable std::mutex mu_;
  std::map<std::string, Control> controls_;  // protected by mu_
  // Replaced by a newer registration on another loop, by session, until
  // their own Detach; protected by mu_.
  std::map<uint64_t, Control> retired_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_AGENT_CONTROLS_H_
