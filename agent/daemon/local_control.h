// The agent's local control endpoint: Cap'n Proto LocalAgent on a unix
// socket, for the shoal CLI on the same node.
//
// Each pull runs on its own thread; progress flows back to the caller's
// listener through the event loop's executor.
#ifndef SHOAL_AGENT_DAEMON_LOCAL_CONTROL_H_
#define SHOAL_AGENT_DAEMON_LOCAL_CONTROL_H_

#include <kj/async-io.h>

#include <functional>
#include <string>

#include "daemon/pull_job.h"
#include "daemon/tracker_link.h"

namespace shoal {

struct LocalControlDeps {
  PullContext& pulls;               // announce_url is refreshed from the link per pull
  TrackerLink& link;
  std::function<AgentStatsSnapshot()> stats;
};

// Listens on `socket_path` (replacing a stale socket file) and serves until
// the promise is dropped. Joins running pulls on destruction of the promise.
kj::Promise<void> ServeLocalControl(kj::AsyncIoContext& io, const std::string& socket_path,
                                    LocalControlDeps deps);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_LOCAL_CONTROL_H_
