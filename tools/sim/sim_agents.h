// SimAgents: the simulated agents' control connections, as the tracker's
// FetchScheduler sees them (AgentOrders).
//
// A fetch order is handed to the simulation (`start_fetch`), which moves the
// chunk from the origin in virtual time and answers it with Delivered; an
// agent that already holds the chunk answers at once with nothing fetched,
// as a real agent does. Killing an agent (Drop) rejects its held orders, as
// a dropped control connection does. A replica order (the hand-on of a
// fresh chunk, SimOptions::hand_on) is handed to the simulation
// (`start_hand_on`), which has the agent ask its peers for the piece first,
// and is answered when the agent holds it (Copied); one for a chunk held
// already is answered at once. The real agent gives up after 60 s; here an
// order waits until the chunk comes or the agent dies. Prefetch orders are
// answered at once and move nothing.
//
// Thread-safety: the kj event loop's thread only, like AgentOrders.
#ifndef SHOAL_TOOLS_SIM_SIM_AGENTS_H_
#define SHOAL_TOOLS_SIM_SIM_AGENTS_H_

#include <kj/async.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/agent_orders.h"
#include "shoal/chunk_id.h"

namespace shoal::sim {

class SimAgents final : public tracker::AgentOrders {
 public:
  // Is `chunk` held by `node` already? Start fetching it from the origin.
  // Start copying it from peers, first of all pieces.
  struct Hooks {
    std::function<bool(int node, int chunk)> holds;
    std::function<void(int node, int chunk, bool takeover)> start_fetch;
    std::function<void(int node, int chunk)> start_hand_on;
  };

  SimAgents(std::vector<std::string> ids, const std::vector<ChunkId>& chunks, Hooks hooks);

  // The agent registered: orders may go to it.
  void Connect(int node);
  // The agent died: it gets no more orders and its held ones fail.
  void Drop(int node);
  // `node` fetched `chunk` from the origin (`bytes`): answers its orders for it.
  void Delivered(int node, int chunk, uint64_t bytes);
  // `node` now holds `chunk`, from wherever: answers its replica orders for it.
  void Copied(int node, int chunk);

  const std::string& id(int node) const { return ids_[static_cast<size_t>(node)]; }
  int node(const std::string& id) const;
  // True once an order was answered since the last call: the kj loop has work.
  bool TakeAnswered();
  uint64_t orders() const { return orders_; }
  uint64_t hand_on_orders() const { return hand_on_orders_; }

  bool Connected(const std::string& agent) const override;
  size_t connected() const override { return count_; }
  kj::Promise<tracker::FetchOutcome> Fetch(const std::string& agent,
                                           const tracker::FetchTarget& target, const ChunkId& chunk,
                                           bool takeover) override;
  kj::Promise<void> Replicate(const std::string& agent, const tracker::FetchTarget& target,
                              const ChunkId& chunk) override;
  kj::Promise<void> Prefetch(const std::string& agent, const tracker::FetchTarget& target) override;

 private:
  struct Held {
    int chunk;
    kj::Own<kj::PromiseFulfiller<tracker::FetchOutcome>> answer;
  };
  struct HeldCopy {
    int chunk;
    kj::Own<kj::PromiseFulfiller<void>> answer;
  };
  const std::vector<std::string> ids_;
  std::unordered_map<std::string, int> by_id_;
  std::unordered_map<ChunkId, int> chunk_index_;
  Hooks hooks_;
  std::vector<bool> connected_;
  size_t count_ = 0;
  std::vector<std::vector<Held>> held_;        // per node, orders not yet answered
  std::vector<std::vector<HeldCopy>> copies_;  // per node, replica orders not yet answered
  bool answered_ = false;
  uint64_t orders_ = 0;
  uint64_t hand_on_orders_ = 0;
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_SIM_AGENTS_H_
