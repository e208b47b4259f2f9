// EtcdClient: blocking calls to an etcd v3 cluster, for state that several
// trackers share (tags, audit, revocations, leases).
//
// It speaks HTTP/1.1 + JSON to etcd's gRPC gateway (POST /v3/kv/range and
// friends), so the tracker needs no etcd library or binary. Keys and values
// are arbitrary bytes in std::string (keys must not be empty). Every call
// blocks until etcd answers or the call gives up: no new attempt starts
// after EtcdOptions::timeout_ms, though one already under way may add up to
// connect_timeout_ms + request_timeout_ms.
//
// Failover: a call goes first to the member that last answered, and on a
// connection failure, a timeout or etcd's "no leader" moves to the next
// endpoint, round after round (100 ms apart) until timeout_ms runs out.
// Writes to a follower are forwarded by etcd to the leader, so any member
// will do. Idle keep-alive connections are kept per endpoint and reused.
//
// Retries and uncertain outcomes: reads (Get, Range, ListPrefix, Ping) and
// KeepAlive are retried on any member after any transport failure. Writes
// (Put, Delete, Txn, GrantLease, Revoke) are retried only when the request
// never left this process (connect failed) or etcd answered "no leader";
// once a write was sent and the answer was lost, the call fails with
// Unavailable and a message containing "outcome unknown": it may or may not
// have been applied. Callers must make writes safe to repeat, typically a
// Txn guarded by a Compare on mod_revision or create_revision, then read
// back and decide. After a leader is lost, a write that a follower had
// forwarded to it hangs until request_timeout_ms and then fails this way;
// a new leader takes about a second (etcd's election timeout) after that.
// A write sent on a reused keep-alive connection that the member closed at
// that very moment also counts as sent: rare, and handled the same way.
//
// Leases: nothing refreshes a lease in the background; its holder calls
// KeepAlive, e.g. every TTL/3, and treats NotFound as "lost".
//
// Limits etcd sets: a request over --max-request-bytes (1.5 MiB by default)
// and a Txn of more than --max-txn-ops operations (128) fail with
// InvalidArgument. An answer over 32 MiB is not read whole and fails with
// Corruption: read big ranges with RangeRequest::limit or ListPrefix.
//
// Errors (one line, naming the endpoint(s) and the operation):
//   Unavailable      no member answered in time, no leader, or a write's
//                    outcome is unknown (see above); retry later
//   InvalidArgument  etcd refused the request: empty key, request too large
//                    (etcd's --max-request-bytes, 1.5 MiB by default), a
//                    compacted revision; retrying will not help
//   NotFound         a lease that does not exist (expired or revoked)
//   NoSpace          etcd's database is over its quota (alarm NOSPACE)
//   PermissionDenied a member's TLS certificate is not signed by ca_file (or
//                    the system store), or etcd's auth refused the request
//   Unauthenticated  etcd's auth wants credentials (not supported yet)
//   Corruption       an answer that is not the JSON the gateway sends
// A missing key is not an error: Get returns std::nullopt.
//
// Thread-safety: an EtcdClient may be used from any number of threads at
// once; each call holds a connection of its own for its duration.
#ifndef SHOAL_TRACKER_ETCD_CLIENT_H_
#define SHOAL_TRACKER_ETCD_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal::tracker {

struct EtcdOptions {
  std::vector<std::string> endpoints;  // "http://host:port" or "https://host:port", >= 1
  uint32_t timeout_ms = 5000;          // whole call, across endpoints and retries
  uint32_t connect_timeout_ms = 1000;  // one TCP connect (+ TLS handshake)
  uint32_t request_timeout_ms = 3000;  // longest wait for progress on one request
  size_t max_idle_per_endpoint = 4;    // idle connections kept per endpoint
  std::string ca_file;                 // PEM CA for https:// endpoints; "" = system store

  // InvalidArgument naming the bad field.
  Status Validate() const;
};

// One key as etcd stores it.
struct KeyValue {
  std::string key;
  std::string value;            // empty when asked keys_only
  int64_t create_revision = 0;  // revision of the key's last creation
  int64_t mod_revision = 0;     // revision of its last change
  int64_t version = 0;          // changes since creation, from 1
  int64_t lease = 0;            // the lease it is attached to; 0 if none
};

// A read of one key or a key range [key, range_end).
struct RangeRequest {
  std::string key;        // REQUIRES: not empty
  std::string range_end;  // exclusive; "" = only `key`
  int64_t limit = 0;      // most keys returned; 0 = all
  int64_t revision = 0;   // read as of this revision; 0 = the newest
  bool keys_only = false;
  bool count_only = false;
  // Highest keys first (with `limit`, the last ones of the range). etcd
  // sorts the whole range to do it: keep such ranges short.
  bool descending = false;

  // Every key that starts with `prefix` ("" = every key).
  static RangeRequest Prefix(const std::string& prefix);
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // in key order
  bool more = false;          // the range holds more keys than `limit` let through
  int64_t count = 0;          // keys in the whole range, regardless of limit
  int64_t revision = 0;       // the store's revision the read saw
};

// The range end that makes [prefix, end) every key starting with `prefix`.
std::string PrefixRangeEnd(const std::string& prefix);

// One condition of a Txn, on one key. A key that does not exist has
// version, create_revision and mod_revision 0 and an empty value.
struct Compare {
  enum class Target : uint8_t { kVersion, kCreateRevision, kModRevision, kValue, kLease };
  enum class Op : uint8_t { kEqual, kNotEqual, kGreater, kLess };

  std::string key;
  Target target = Target::kModRevision;
  Op op = Op::kEqual;
  int64_t number = 0;  // the operand for every target but kValue
  std::string value;   // the operand for kValue

  // The key does not exist (create_revision == 0): create-if-absent.
  static Compare Absent(const std::string& key);
  // The key was last changed at `rev` (0: it does not exist): compare-and-swap.
  static Compare ModRevisionIs(const std::string& key, int64_t rev);
  static Compare ValueIs(const std::string& key, const std::string& value);
};

// One operation inside a Txn.
struct TxnOp {
  enum class Kind : uint8_t { kPut, kDelete, kRange };

  Kind kind = Kind::kRange;
  std::string key;
  std::string value;      // kPut
  int64_t lease = 0;      // kPut; 0 = none
  std::string range_end;  // kDelete and kRange; "" = only `key`
  int64_t limit = 0;      // kRange; 0 = all

  static TxnOp Put(const std::string& key, const std::string& value, int64_t lease = 0);
  static TxnOp Delete(const std::string& key);
  static TxnOp DeletePrefix(const std::string& prefix);
  static TxnOp Get(const std::string& key);
};

// What one TxnOp of the branch that ran returned.
struct TxnOpResult {
  TxnOp::Kind kind = TxnOp::Kind::kRange;
  RangeResult range;    // kRange: the keys read
  int64_t deleted = 0;  // kDelete: keys removed
};

struct TxnResult {
  bool succeeded = false;            // every Compare held, so the success ops ran
  int64_t revision = 0;              // the store's revision after the txn
  std::vector<TxnOpResult> results;  // one per op of the branch that ran, in order
};

class EtcdClient {
 public:
  // Checks the options; connects lazily, so an unreachable cluster is not an
  // error here. InvalidArgument for bad options or an unreadable ca_file.
  static Result<std::unique_ptr<EtcdClient>> Open(const EtcdOptions& options);

  virtual ~EtcdClient() = default;
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // The key's current pair, or std::nullopt if it does not exist.
  virtual Result<std::optional<KeyValue>> Get(const std::string& key) = 0;
  // One page of a range read (linearizable: it reflects every write
  // acknowledged before it began).
  virtual Result<RangeResult> Range(const RangeRequest& request) = 0;
  // Every key starting with `prefix`, in key order, read in pages of
  // `page_size` keys all at the revision of the first page, so the listing
  // is one consistent snapshot. Calls `each` per key; a non-OK status from
  // it stops the listing and is returned. InvalidArgument (compacted) if the
  // snapshot's revision is compacted away before the last page.
  virtual Status ListPrefix(const std::string& prefix, int64_t page_size,
                            const std::function<Status(const KeyValue&)>& each) = 0;

  // Writes the key; returns the revision of the write. `lease` 0 = none;
  // NotFound if the lease does not exist.
  virtual Result<int64_t> Put(const std::string& key, const std::string& value,
                              int64_t lease = 0) = 0;
  // Deletes [key, range_end) ("" = only key); returns how many keys went.
  virtual Result<int64_t> Delete(const std::string& key, const std::string& range_end = "") = 0;
  // If every compare holds, runs `success`, else `failure`, atomically.
  // See the retry note at the top: an Unavailable "outcome unknown" may
  // have been applied.
  virtual Result<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<TxnOp>& success,
                                const std::vector<TxnOp>& failure = {}) = 0;

  // A new lease of `ttl_s` seconds; returns its ID. Keys put with it are
  // deleted when it expires or is revoked.
  virtual Result<int64_t> GrantLease(int64_t ttl_s) = 0;
  // Refreshes the lease to its full TTL; returns the TTL now left (s).
  // NotFound if it has expired or was revoked.
  virtual Result<int64_t> KeepAlive(int64_t lease) = 0;
  // Ends the lease and deletes its keys. NotFound if it no longer exists.
  virtual Status Revoke(int64_t lease) = 0;

  // OK if some member answers and knows a leader: for /healthz. Asks each
  // member once, from the one that answered last; Unavailable naming every
  // member's problem otherwise.
  virtual Status Ping() = 0;

  // Diagnostics for tests and status pages.
  struct MemberStatus {
    std::string endpoint;  // the endpoint that answered
    uint64_t member_id = 0;
    uint64_t leader_id = 0;  // 0 while the member knows no leader
    std::string version;     // etcd's, e.g. "3.4.23"
  };
  // The status of the member at exactly `endpoint` (one of the options'),
  // without failover.
  virtual Result<MemberStatus> StatusOf(const std::string& endpoint) = 0;

 protected:
  EtcdClient() = default;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ETCD_CLIENT_H_
