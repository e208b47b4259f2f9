#include "shoal/origin_counters.h"

namespace shoal {

const OpCounters& OriginCounters::of(OriginOp op) const {
  switch (op) {
    case OriginOp::kGet:
      return get;
    case OriginOp::kPut:
      return put;
    case OriginOp::kHead:
      return head;
    case OriginOp::kList:
      return list;
    default:
      return del;
  }
}

OriginCounters OriginCounterSet::Snapshot() const {
  auto load = [](const Atomic& a) {
    OpCounters c;
    c.requests = a.requests.load(std::memory_order_relaxed);
    c.retries = a.retries.load(std::memory_order_relaxed);
    c.errors = a.errors.load(std::memory_order_relaxed);
    c.bytes = a.bytes.load(std::memory_order_relaxed);
    return c;
  };
  OriginCounters out;
  out.get = load(ops_[static_cast<int>(OriginOp::kGet)]);
  out.put = load(ops_[static_cast<int>(OriginOp::kPut)]);
  out.head = load(ops_[static_cast<int>(OriginOp::kHead)]);
  out.list = load(ops_[static_cast<int>(OriginOp::kList)]);
  out.del = load(ops_[static_cast<int>(OriginOp::kDelete)]);
  return out;
}

}  // namespace shoal
