// FlowNetwork: transfers between nodes, and from the origin, at flow level.
//
// Every node has an upload and a download link; the origin has one egress
// link. A flow's rate is the smaller of its two links' equal shares:
// min(up / flows on the sender's uplink, down / flows on the receiver's
// downlink), where the origin's share is its bandwidth over all origin
// flows. Capacity a flow cannot use at one end is not handed to the others
// (no max-min water-filling), so the rates are a lower bound where links of
// different speeds meet.
//
// When a flow starts or ends, only the flows on its two links get new rates
// and finish times (FinishHeap).
//
// Thread-safety: none; the simulation is single-threaded.
#ifndef SHOAL_TOOLS_SIM_FLOW_NETWORK_H_
#define SHOAL_TOOLS_SIM_FLOW_NETWORK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "finish_heap.h"

namespace shoal::sim {

class FlowNetwork {
 public:
  static constexpr int kOrigin = -1;  // the sender of an origin flow

  struct Flow {
    int src = kOrigin;  // node, or kOrigin
    int dst = 0;
    int chunk = 0;
    double bytes = 0;  // the flow's size
  };

  FlowNetwork(size_t nodes, double node_bytes_per_s, double origin_bytes_per_s);

  // Starts a flow of `f.bytes` at `now`; returns its id (reused after it ends).
  int Start(const Flow& f, double now);
  // Ends flow `id` early (an end died); returns the bytes it had moved.
  double Cancel(int id, double now);

  // The earliest finish time of a flow, or +infinity.
  double NextFinish();
  // Ends the earliest flow, which finishes at NextFinish(). REQUIRES: a flow.
  Flow PopFinished();

  // The flows on a node's uplink and downlink (ids), to cancel when it dies.
  const std::vector<int>& uplink(int node) const { return up_[static_cast<size_t>(node)]; }
  const std::vector<int>& downlink(int node) const { return down_[static_cast<size_t>(node)]; }
  size_t origin_flows() const { return origin_.size(); }
  const Flow& flow(int id) const { return slots_[static_cast<size_t>(id)].f; }

 private:
  struct Slot {
    Flow f;
    bool live = false;
    double left = 0;                  // bytes still to move, as of `updated`
    double rate = 0;                  // bytes per second
    double updated = 0;               // virtual seconds
    size_t up_pos = 0, down_pos = 0;  // places in the two link lists
  };
  std::vector<int>& UpList(int src);
  void Remove(int id);
  // New rates for every flow on `src`'s uplink and `dst`'s downlink.
  void Reshare(int src, int dst, double now);
  void Update(int id, double now);

  const double node_bps_, origin_bps_;
  std::vector<Slot> slots_;
  std::vector<int> free_;
  std::vector<std::vector<int>> up_, down_;
  std::vector<int> origin_;
  FinishHeap finishes_;
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_FLOW_NETWORK_H_
