// EventQueue: the simulator's timed events, earliest first; events at the
// same instant come out in the order they were pushed, so a run is
// deterministic for a seed.
//
// Thread-safety: none; the simulation is single-threaded.
#ifndef SHOAL_TOOLS_SIM_EVENT_QUEUE_H_
#define SHOAL_TOOLS_SIM_EVENT_QUEUE_H_

#include <cstdint>
#include <queue>
#include <vector>

namespace shoal::sim {

enum class EventKind {
  kRegister,     // `node`'s agent joins the tracker's directory
  kPullStart,    // `node` starts its pull and joins the swarm
  kKill,         // `node` dies (SIGKILL): its connections drop
  kOriginStart,  // `node`'s origin request for `chunk` sends its first byte
  kPoll,         // every pull looks for chunks no peer offers
  kTrackerTick,  // FetchScheduler::Tick
  kHeartbeats,   // every live agent heartbeats, with the origin bytes it has read
  kSample,       // bytes received so far, as the benchmark samples its nodes' counters
};

struct Event {
  double t = 0;  // virtual seconds
  EventKind kind = EventKind::kPoll;
  int node = -1;
  int chunk = -1;
};

class EventQueue {
 public:
  void Push(const Event& e) { heap_.push({e, next_seq_++}); }
  bool empty() const { return heap_.empty(); }
  // REQUIRES: !empty()
  double next_time() const { return heap_.top().e.t; }
  // REQUIRES: !empty()
  Event Pop() {
    Event e = heap_.top().e;
    heap_.pop();
    return e;
  }

 private:
  struct Item {
    Event e;
    uint64_t seq;
    bool operator>(const Item& o) const { return e.t != o.e.t ? e.t > o.e.t : seq > o.seq; }
  };
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_EVENT_QUEUE_H_
