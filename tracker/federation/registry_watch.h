// Registry.watch: what changed in some namespaces after a position in the
// audit log, answered as soon as something did (a long poll woken by the
// store's ChangeSignal), or after the caller's wait with nothing.
#ifndef SHOAL_TRACKER_FEDERATION_REGISTRY_WATCH_H_
#define SHOAL_TRACKER_FEDERATION_REGISTRY_WATCH_H_

#include <kj/async.h>
#include <kj/timer.h>

#include <cstdint>
#include <string>
#include <vector>

#include "registry/registry_store.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {

class BlockingPool;
class ChangeSignal;

// What a watch reads and waits on. Every reference must outlive the call.
struct WatchDeps {
  RegistryStore& store;
  BlockingPool& pool;  // reads of the audit log run here
  ChangeSignal& changes;
  kj::Timer& timer;  // the caller's loop's: ends the wait
};

// One change to a model, from an audit entry.
struct ModelEventRecord {
  uint64_t seq = 0;
  std::string ns, name, action;
  int64_t at_ms = 0;
};

// The longest a watch waits (its waitMs is cut to this).
constexpr uint32_t kMaxWatchWaitMs = 60000;

// Of `entries`, the changes to versions and tags of models in `namespaces`:
// actions publish, durable, publish-failed, tag, delete and retention, whose
// target reads "ns/name:...". Others (gc, warm, tokens) are left out.
std::vector<ModelEventRecord> ModelEventsOf(const std::vector<AuditEntry>& entries,
                                            const std::vector<std::string>& namespaces);

// Answers `c` (its caller was checked for read on every namespace). A
// position is 1 + the sequence number of the last audit entry looked at.
// At once when `after` is 0 (the current position) or past the log's end
// (the registry was replaced: its end, so the caller reads everything again);
// otherwise once an event is stored, or after `wait_ms`.
kj::Promise<void> AnswerWatch(
    const WatchDeps& d, std::vector<std::string> namespaces, uint64_t after, uint32_t wait_ms,
    capnp::CallContext<proto::Registry::WatchParams, proto::Registry::WatchResults> c);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FEDERATION_REGISTRY_WATCH_H_
