// FinishHeap: flows' finish times, earliest first, each flow at most once,
// so a new rate moves a flow's entry (decrease or increase key) instead of
// leaving a stale one behind. Ties go to the lower id, so runs repeat.
//
// Thread-safety: none; the simulation is single-threaded.
#ifndef SHOAL_TOOLS_SIM_FINISH_HEAP_H_
#define SHOAL_TOOLS_SIM_FINISH_HEAP_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace shoal::sim {

class FinishHeap {
 public:
  bool empty() const { return heap_.empty(); }
  // REQUIRES: !empty()
  int top() const { return heap_[0].id; }
  double top_time() const { return heap_[0].t; }

  // Sets flow `id`'s finish time `t`, adding it if absent. REQUIRES: id >= 0.
  void Set(int id, double t) {
    const size_t i = static_cast<size_t>(id);
    if (i >= pos_.size()) pos_.resize(i + 1, kAbsent);
    if (pos_[i] == kAbsent) {
      pos_[i] = heap_.size();
      heap_.push_back({t, id});
      Up(heap_.size() - 1);
      return;
    }
    const size_t p = pos_[i];
    const bool earlier = t < heap_[p].t;
    heap_[p].t = t;
    earlier ? Up(p) : Down(p);
  }

  // Removes flow `id` if present.
  void Erase(int id) {
    const size_t i = static_cast<size_t>(id);
    if (i >= pos_.size() || pos_[i] == kAbsent) return;
    const size_t p = pos_[i];
    pos_[i] = kAbsent;
    if (p + 1 == heap_.size()) {
      heap_.pop_back();
      return;
    }
    heap_[p] = heap_.back();
    heap_.pop_back();
    pos_[static_cast<size_t>(heap_[p].id)] = p;
    Up(p);
    Down(pos_[static_cast<size_t>(heap_[p].id)]);
  }

 private:
  static constexpr size_t kAbsent = static_cast<size_t>(-1);
  struct Entry {
    double t;
    int id;
    bool operator<(const Entry& o) const { return t != o.t ? t < o.t : id < o.id; }
  };
  void Place(size_t p, const Entry& e) {
    heap_[p] = e;
    pos_[static_cast<size_t>(e.id)] = p;
  }
  void Up(size_t p) {
    const Entry e = heap_[p];
    while (p > 0 && e < heap_[(p - 1) / 2]) {
      Place(p, heap_[(p - 1) / 2]);
      p = (p - 1) / 2;
    }
    Place(p, e);
  }
  void Down(size_t p) {
    const Entry e = heap_[p];
    const size_t n = heap_.size();
    for (;;) {
      size_t c = 2 * p + 1;
      if (c >= n) break;
      if (c + 1 < n && heap_[c + 1] < heap_[c]) ++c;
      if (!(heap_[c] < e)) break;
      Place(p, heap_[c]);
      p = c;
    }
    Place(p, e);
  }

  std::vector<Entry> heap_;
  std::vector<size_t> pos_;  // per flow id: its place in heap_, or kAbsent
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_FINISH_HEAP_H_
