#include "sim/flow_network.h"

#include <algorithm>
#include <limits>

namespace shoal::sim {

FlowNetwork::FlowNetwork(size_t nodes, double node_bytes_per_s, double origin_bytes_per_s,
                         double origin_request_bytes_per_s)
    : node_bps_(node_bytes_per_s),
      origin_bps_(origin_bytes_per_s),
      request_bps_(origin_request_bytes_per_s),
      up_(nodes),
      down_(nodes),
      down_weight_(nodes, 0) {}

std::vector<int>& FlowNetwork::UpList(int src) {
  return src == kOrigin ? origin_ : up_[static_cast<size_t>(src)];
}

int FlowNetwork::Start(const Flow& f, double now) {
  int id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<int>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[static_cast<size_t>(id)];
  s.f = f;
  s.live = true;
  s.left = f.bytes;
  s.rate = 0;
  s.updated = now;
  std::vector<int>& up = UpList(f.src);
  s.up_pos = up.size();
  up.push_back(id);
  std::vector<int>& down = down_[static_cast<size_t>(f.dst)];
  s.down_pos = down.size();
  down.push_back(id);
  down_weight_[static_cast<size_t>(f.dst)] += f.weight;
  Reshare(f.src, f.dst, now);
  return id;
}

void FlowNetwork::Remove(int id) {
  Slot& s = slots_[static_cast<size_t>(id)];
  auto erase = [this](std::vector<int>& list, size_t pos, bool up) {
    int last = list.back();
    list[pos] = last;
    list.pop_back();
    if (pos < list.size()) {
      Slot& moved = slots_[static_cast<size_t>(last)];
      (up ? moved.up_pos : moved.down_pos) = pos;
    }
  };
  erase(UpList(s.f.src), s.up_pos, true);
  erase(down_[static_cast<size_t>(s.f.dst)], s.down_pos, false);
  double& w = down_weight_[static_cast<size_t>(s.f.dst)];
  w = down_[static_cast<size_t>(s.f.dst)].empty() ? 0 : w - s.f.weight;  // no drift when idle
  s.live = false;
  finishes_.Erase(id);
  free_.push_back(id);
}

double FlowNetwork::Moved(int id, double now) const {
  const Slot& s = slots_[static_cast<size_t>(id)];
  return s.f.bytes - std::max(0.0, s.left - s.rate * (now - s.updated));
}

double FlowNetwork::Cancel(int id, double now) {
  const double moved = Moved(id, now);
  const Flow f = slots_[static_cast<size_t>(id)].f;
  Remove(id);
  Reshare(f.src, f.dst, now);
  return moved;
}

void FlowNetwork::SetRate(int id, double rate, double now) {
  Slot& s = slots_[static_cast<size_t>(id)];
  s.left = std::max(0.0, s.left - s.rate * (now - s.updated));
  s.updated = now;
  if (rate == s.rate) return;  // the same finish time
  s.rate = rate;
  finishes_.Set(id, now + s.left / s.rate);
}

void FlowNetwork::Refill(int src, double now) {
  // Weighted water-filling of the sender's capacity: the flows that want
  // less than their weighted share get what they want, the rest split what
  // is left by weight. Sorted by want per unit of weight.
  std::vector<std::pair<double, int>>& want = scratch_;
  want.clear();
  double weights = 0;
  for (int id : UpList(src)) {
    const Flow& f = slots_[static_cast<size_t>(id)].f;
    // What it can take per unit of its weight: its receiver's link by
    // weight, and an origin flow no more than one request carries.
    double per_weight = node_bps_ / down_weight_[static_cast<size_t>(f.dst)];
    if (src == kOrigin && request_bps_ > 0)
      per_weight = std::min(per_weight, request_bps_ / f.weight);
    want.push_back({per_weight, id});
    weights += f.weight;
  }
  std::sort(want.begin(), want.end());
  double left = src == kOrigin ? origin_bps_ : node_bps_;
  for (const auto& [per_weight, id] : want) {
    const double w = slots_[static_cast<size_t>(id)].f.weight;
    const double rate = std::min(left * w / weights, per_weight * w);
    left -= rate;
    weights -= w;
    SetRate(id, rate, now);
  }
}

void FlowNetwork::Reshare(int src, int dst, double now) {
  // A flow's rate depends on its sender's flows and on how many flows each
  // of their receivers has: the senders to refill are `src` and every
  // sender to `dst`.
  std::vector<int>& senders = senders_;
  senders.clear();
  senders.push_back(src);
  for (int id : down_[static_cast<size_t>(dst)]) {
    const int from = slots_[static_cast<size_t>(id)].f.src;
    if (std::find(senders.begin(), senders.end(), from) == senders.end()) senders.push_back(from);
  }
  for (int from : senders) Refill(from, now);
}

double FlowNetwork::NextFinish() {
  return finishes_.empty() ? std::numeric_limits<double>::infinity() : finishes_.top_time();
}

FlowNetwork::Flow FlowNetwork::PopFinished() {
  const int id = finishes_.top();
  const double t = finishes_.top_time();
  const Flow f = slots_[static_cast<size_t>(id)].f;
  Remove(id);
  Reshare(f.src, f.dst, t);
  return f;
}

}  // namespace shoal::sim
