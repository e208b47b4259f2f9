// OriginCounters: what an Origin has asked of its backing store, per
// operation. The agent exports them on /metrics, and egress measurements read
// `get.bytes` as the bytes the origin served.
//
// Thread-safety: OriginCounterSet is updated from any thread with relaxed
// atomics; Snapshot() is a consistent-enough view for metrics, not a
// transaction.
#ifndef SHOAL_ORIGIN_COUNTERS_H_
#define SHOAL_ORIGIN_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace shoal {

struct OpCounters {
  uint64_t requests = 0;  // requests sent, each retry counted again
  uint64_t retries = 0;   // of those, how many were retries
  uint64_t errors = 0;    // calls that returned a non-OK status to the caller
  uint64_t bytes = 0;     // payload bytes moved: received for get/list, sent for put
};

enum class OriginOp : uint8_t { kGet = 0, kPut, kHead, kList, kDelete, kCount };

struct OriginCounters {
  OpCounters get, put, head, list, del;
  const OpCounters& of(OriginOp op) const;
};

class OriginCounterSet {
 public:
  void AddRequest(OriginOp op) { At(op).requests.fetch_add(1, std::memory_order_relaxed); }
  void AddRetry(OriginOp op) { At(op).retries.fetch_add(1, std::memory_order_relaxed); }
  void AddError(OriginOp op) { At(op).errors.fetch_add(1, std::memory_order_relaxed); }
  void AddBytes(OriginOp op, uint64_t n) { At(op).bytes.fetch_add(n, std::memory_order_relaxed); }
  OriginCounters Snapshot() const;

 private:
  struct Atomic {
    std::atomic<uint64_t> requests{0}, retries{0}, errors{0}, bytes{0};
  };
  Atomic& At(OriginOp op) { return ops_[static_cast<int>(op)]; }
  Atomic ops_[static_cast<int>(OriginOp::kCount)];
};

}  // namespace shoal

#endif  // SHOAL_ORIGIN_COUNTERS_H_
