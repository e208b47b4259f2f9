// Sends one batch of swarm changes (swarm_reports.h) to the tracker as
// AgentSession.announceBatch, and settles it with the reply.
#ifndef SHOAL_AGENT_DAEMON_SWARM_BATCH_RPC_H_
#define SHOAL_AGENT_DAEMON_SWARM_BATCH_RPC_H_

#include <kj/async.h>

#include <string>
#include <vector>

#include "daemon/swarm_reports.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal {

// The most changes one batch carries: the tracker's limit.
constexpr size_t kMaxSwarmBatch = 4096;

// Sends `batch` (at most kMaxSwarmBatch) with the agent's `zone`. The
// promise never fails: a failed call fails the batch's waiters (Fail).
// `reports` must outlive the promise.
kj::Promise<void> SendSwarmBatch(proto::AgentSession::Client session, SwarmReports& reports,
                                 std::vector<SwarmChange> batch, const std::string& zone);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_SWARM_BATCH_RPC_H_
