// FlowNetwork: transfers between nodes, and from the origin, at flow level.
//
// Every node has an upload and a download link; the origin has one egress
// link. A receiver's link is split among its flows in proportion to their
// weights (1 unless a flow is given more): that share is what each of them
// can take. A sender's link is water-filled over its flows by weight: a
// flow whose receiver's share is smaller than its weighted split gets that
// share, and the others split what it leaves. So no link carries more
// than its capacity, and a sender's capacity is used while any receiver can
// take more. An origin flow may also have a limit of its own (one GET
// stream). Not max-min fair: a receiver does not hand on what a slow
// sender leaves of its own link.
//
// When a flow starts or ends, only the flows of its sender and of each
// sender to its receiver get new rates and finish times (FinishHeap).
//
// Thread-safety: none; the simulation is single-threaded.
#ifndef SHOAL_TOOLS_SIM_FLOW_NETWORK_H_
#define SHOAL_TOOLS_SIM_FLOW_NETWORK_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/finish_heap.h"

namespace shoal::sim {

class FlowNetwork {
 public:
  static constexpr int kOrigin = -1;  // the sender of an origin flow

  struct Flow {
    int src = kOrigin;  // node, or kOrigin
    int dst = 0;
    int chunk = 0;
    double bytes = 0;   // the flow's size
    double weight = 1;  // its claim on both links against flows of weight 1
  };

  // `origin_request_bytes_per_s`: what one origin flow can carry at most
  // (an object store's single GET stream); 0: no limit of its own.
  FlowNetwork(size_t nodes, double node_bytes_per_s, double origin_bytes_per_s,
              double origin_request_bytes_per_s = 0);

  // Starts a flow of `f.bytes` at `now`; returns its id (reused after it ends).
  int Start(const Flow& f, double now);
  // Ends flow `id` early (an end died); returns the bytes it had moved.
  double Cancel(int id, double now);
  // The bytes live flow `id` has moved by `now`.
  double Moved(int id, double now) const;

  // The earliest finish time of a flow, or +infinity.
  double NextFinish();
  // Ends the earliest flow, which finishes at NextFinish(). REQUIRES: a flow.
  Flow PopFinished();

  // The flows on a node's uplink and downlink (ids), to cancel when it dies.
  const std::vector<int>& uplink(int node) const { return up_[static_cast<size_t>(node)]; }
  const std::vector<int>& downlink(int node) const { return down_[static_cast<size_t>(node)]; }
  const std::vector<int>& origin_flows() const { return origin_; }
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
  // New rates for the flows on `src`'s uplink.
  void Refill(int src, double now);
  void SetRate(int id, double rate, double now);

  const double node_bps_, origin_bps_, request_bps_;
  std::vector<Slot> slots_;
  std::vector<int> free_;
  std::vector<std::vector<int>> up_, down_;
  std::vector<double> down_weight_;  // per node: the weights of its downlink's flows
  std::vector<int> origin_;
  FinishHeap finishes_;
  std::vector<std::pair<double, int>> scratch_;  // Refill's (demand, flow)
  std::vector<int> senders_;                     // Reshare's senders to refill
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_FLOW_NETWORK_H_
