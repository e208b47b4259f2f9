// The Registry calls that become origin fetch orders: need (an agent asks
// for chunks no peer offered it) and warm (fetch a version ahead of a
// scale-out, optionally onto named nodes). Both are called on the caller's
// connection loop, after its token has been checked; what touches the fetch
// scheduler runs on the scheduler's loop, and the answer comes back.
#ifndef SHOAL_TRACKER_FETCH_REQUESTS_H_
#define SHOAL_TRACKER_FETCH_REQUESTS_H_

#include <capnp/capability.h>
#include <kj/async.h>

#include <string>
#include <vector>

#include "agents/agent_directory.h"
#include "common/tracker_metrics.h"
#include "scheduler/agent_orders.h"
#include "scheduler/fetch_scheduler.h"
#include "shoal/manifest.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/version_id.h"

namespace shoal::tracker {

// What need and warm touch. Every reference must outlive the call.
struct WarmDeps {
  const kj::Executor& scheduler_loop;  // the loop `fetches` and `orders`' callers run on
  FetchScheduler& fetches;
  AgentDirectory& agents;
  AgentOrders& orders;
  TrackerMetrics& metrics;
};

// Checks that every chunk asked for belongs to ns/name's version and
// queues the ones not already queued or recently delivered.
kj::Promise<void> AnswerNeed(
    const WarmDeps& d, const std::string& ns, const std::string& name,
    capnp::CallContext<proto::Registry::NeedParams, proto::Registry::NeedResults> c);

// Which live agents `nodes` names: "" none, "all", a count N (the N with the
// most free cache), or "key=value" ("zone=..." or one of an agent's labels).
// Only agents `orders` can reach count. InvalidArgument for anything else.
Result<std::vector<std::string>> SelectNodes(AgentDirectory& agents, const AgentOrders& orders,
                                             const std::string& nodes);

// Queues every chunk of the version for its owner and sends each named node
// a prefetch order; resolves when all have answered. Progress goes to the
// call's listener, on the caller's loop.
kj::Promise<void> RunWarm(
    const WarmDeps& d, const std::string& ns, const std::string& name, const VersionId& id,
    const Manifest& m,
    capnp::CallContext<proto::Registry::WarmParams, proto::Registry::WarmResults> c);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FETCH_REQUESTS_H_
