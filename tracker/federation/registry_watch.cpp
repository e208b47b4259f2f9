#include "federation/registry_watch.h"

#include <algorithm>
#include <memory>
#include <set>

#include "common/blocking_pool.h"
#include "common/change_signal.h"
#include "proto/kj_status.h"

namespace shoal::tracker {
namespace {

// Audit entries read per look; a fuller page is looked past at once.
constexpr uint32_t kWatchPage = 1000;

const std::set<std::string>& ModelActions() {
  static const std::set<std::string> actions = {"publish", "durable", "publish-failed",
                                                "tag",     "delete",  "retention"};
  return actions;
}

// One look at the log past `after`.
struct WatchLook {
  uint64_t position = 0;  // the first entry not looked at yet: 1 + the last one
  bool more = false;      // a full page: there may be more past it
  bool reset = false;     // `after` was past the log's end
  std::vector<ModelEventRecord> events;
};

Result<WatchLook> Look(RegistryStore& store, uint64_t after,
                       const std::vector<std::string>& namespaces) {
  WatchLook look;
  Result<uint64_t> end = store.AuditEnd();
  if (!end.ok()) return end.status();
  // Positions count from 1, so that 0 can mean "now" even in a registry
  // whose log is empty.
  if (after == 0 || after > *end + 1) {
    look.position = *end + 1;
    look.reset = after != 0;
    return look;
  }
  look.position = after;
  Result<std::vector<AuditEntry>> entries = store.AuditLog(after - 1, kWatchPage);
  if (!entries.ok()) return entries.status();
  if (!entries->empty()) look.position = entries->back().seq + 1;
  look.more = entries->size() >= kWatchPage;
  look.events = ModelEventsOf(*entries, namespaces);
  return look;
}

struct Watch {
  WatchDeps d;
  std::vector<std::string> namespaces;
  uint64_t after;
  kj::TimePoint deadline;
  capnp::CallContext<proto::Registry::WatchParams, proto::Registry::WatchResults> c;
};

void Answer(Watch& w, const WatchLook& look) {
  auto out = w.c.getResults();
  out.setPosition(look.position);
  auto events = out.initEvents(static_cast<unsigned>(look.events.size()));
  for (size_t i = 0; i < look.events.size(); ++i) {
    const ModelEventRecord& e = look.events[i];
    auto r = events[static_cast<unsigned>(i)];
    r.setSeq(e.seq);
    r.setNamespace(e.ns);
    r.setName(e.name);
    r.setAction(e.action);
    r.setAtMs(e.at_ms);
  }
}

kj::Promise<void> Round(std::shared_ptr<Watch> w) {
  const uint64_t seen = w->d.changes.generation();
  RegistryStore& store = w->d.store;
  const uint64_t after = w->after;
  // Copied: a caller that hangs up drops `w` while the look still runs.
  return w->d.pool
      .Run<Result<WatchLook>>(
          [&store, after, namespaces = w->namespaces] { return Look(store, after, namespaces); })
      .then([w, seen](Result<WatchLook> look) -> kj::Promise<void> {
        ThrowIfError(look.status());
        if (!look->events.empty() || look->reset || w->after == 0 ||
            w->d.timer.now() >= w->deadline) {
          Answer(*w, *look);
          return kj::READY_NOW;
        }
        w->after = look->position;
        if (look->more) return Round(w);
        return w->d.changes.After(seen).exclusiveJoin(w->d.timer.atTime(w->deadline)).then([w] {
          return Round(w);
        });
      });
}

}  // namespace

std::vector<ModelEventRecord> ModelEventsOf(const std::vector<AuditEntry>& entries,
                                            const std::vector<std::string>& namespaces) {
  std::vector<ModelEventRecord> out;
  for (const AuditEntry& a : entries) {
    if (ModelActions().count(a.action) == 0) continue;
    const size_t slash = a.target.find('/');
    const size_t colon = a.target.find(':', slash == std::string::npos ? 0 : slash);
    if (slash == std::string::npos || colon == std::string::npos || colon <= slash + 1) continue;
    std::string ns = a.target.substr(0, slash);
    if (std::find(namespaces.begin(), namespaces.end(), ns) == namespaces.end()) continue;
    out.push_back(
        {a.seq, std::move(ns), a.target.substr(slash + 1, colon - slash - 1), a.action, a.at_ms});
  }
  return out;
}

kj::Promise<void> AnswerWatch(
    const WatchDeps& d, std::vector<std::string> namespaces, uint64_t after, uint32_t wait_ms,
    capnp::CallContext<proto::Registry::WatchParams, proto::Registry::WatchResults> c) {
  const kj::TimePoint deadline =
      d.timer.now() + std::min(wait_ms, kMaxWatchWaitMs) * kj::MILLISECONDS;
  return Round(std::make_shared<Watch>(Watch{d, std::move(namespaces), after, deadline, c}));
}

}  // namespace shoal::tracker
