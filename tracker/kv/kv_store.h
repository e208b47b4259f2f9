// KvStore: the ordered key-value engine under the tracker's registry.
//
// Two engines sit behind it: LevelDB in the tracker's data folder (the
// embedded default, leveldb_kv.h) and an etcd cluster shared by a fleet of
// trackers (etcd_kv.h). The registry (registry_store.h) is written once,
// over this interface, so both hold the same keys and behave alike.
//
// Keys and values are arbitrary bytes; keys sort bytewise. A write is a
// KvBatch: puts and deletes applied atomically and durably (synced to disk,
// or committed by the etcd quorum), guarded by conditions on keys that
// must all hold when it applies. Guards are how several trackers writing
// the same store stay consistent without a lock: a writer reads, builds
// its batch with guards on what it read, and retries from the read when a
// guard fails.
//
// Thread-safety: every method may be called from many threads at once.
#ifndef SHOAL_TRACKER_KV_STORE_H_
#define SHOAL_TRACKER_KV_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal::tracker {

struct KvPair {
  std::string key;
  std::string value;
};

// One atomic write, with the conditions it needs.
class KvBatch {
 public:
  struct Op {
    std::string key;
    std::optional<std::string> value;  // nullopt: delete
  };
  struct Guard {
    std::string key;
    std::optional<std::string> value;  // nullopt: the key must be absent
  };

  void Put(std::string key, std::string value) {
    ops_.push_back({std::move(key), std::move(value)});
  }
  void Delete(std::string key) { ops_.push_back({std::move(key), std::nullopt}); }
  // The batch applies only if `key` does not exist.
  void ExpectAbsent(std::string key) { guards_.push_back({std::move(key), std::nullopt}); }
  // The batch applies only if `key` exists and holds exactly `value`.
  void ExpectValue(std::string key, std::string value) {
    guards_.push_back({std::move(key), std::move(value)});
  }

  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Guard>& guards() const { return guards_; }
  bool empty() const { return ops_.empty(); }

 private:
  std::vector<Op> ops_;
  std::vector<Guard> guards_;
};

class KvStore {
 public:
  KvStore() = default;
  virtual ~KvStore() = default;
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  // The value of `key`, or nullopt if it does not exist. Unavailable or
  // IOError if the engine cannot answer.
  virtual Result<std::optional<std::string>> Get(const std::string& key) = 0;

  // Up to `limit` pairs with begin <= key < end, in key order (descending
  // when `reverse`). An empty `end` means no upper bound.
  // REQUIRES: limit >= 1.
  virtual Result<std::vector<KvPair>> Scan(const std::string& begin, const std::string& end,
                                           size_t limit, bool reverse) = 0;

  // Applies every op of `batch` at once, or none. AlreadyExists when a
  // guard does not hold (another writer got there first; nothing was
  // written). Unavailable if the engine cannot be reached: the batch may or
  // may not have applied, so batches are built to be safe to retry.
  // REQUIRES: batch.ops().size() + batch.guards().size() <= max_batch_ops().
  virtual Status Apply(const KvBatch& batch) = 0;

  // The most ops plus guards one batch may carry.
  virtual size_t max_batch_ops() const = 0;
  // The largest value worth storing inline; bigger blobs go elsewhere.
  virtual size_t max_value_bytes() const = 0;

  // OK if the engine answers a read; the /healthz probe.
  virtual Status Ping() = 0;

  // "leveldb:/var/lib/..." or "etcd:http://a:2379,...", for messages.
  virtual std::string Describe() const = 0;
};

// Calls fn for every pair whose key starts with `prefix`, in key order,
// reading pages of `page` pairs so no one read is unbounded. Stops early,
// with OK, when fn returns false; stops at the first read error.
Status VisitPrefix(KvStore& kv, const std::string& prefix,
                   const std::function<bool(const KvPair&)>& fn, size_t page = 1000);
// The same for begin <= key < end (an empty end: no upper bound).
Status VisitRange(KvStore& kv, const std::string& begin, const std::string& end,
                  const std::function<bool(const KvPair&)>& fn, size_t page = 1000);

// The first key after every key starting with `prefix`: the end of a scan.
std::string PrefixEnd(const std::string& prefix);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_KV_STORE_H_
