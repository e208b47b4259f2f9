// The agent's local control endpoint: Cap'n Proto LocalAgent on a unix
// socket, for the shoal CLI on the same node.
//
// Each pull runs on its own thread; progress flows back to the caller's
// listener through the event loop's executor. The agent writes a pull only
// into files the caller created and opened itself, and reads a seed only
// from files the caller opened (daemon/caller_files.h), so a caller gets
// nothing its own rights would not give it. The socket's permission bits
// and group come from --control-socket-mode and --control-socket-group.
// When the caller hangs up, its job is cancelled. A mount
// (daemon/mount_version.h) reads chunks as the HTTP reads do, through
// `reads`.
#ifndef SHOAL_AGENT_DAEMON_LOCAL_CONTROL_H_
#define SHOAL_AGENT_DAEMON_LOCAL_CONTROL_H_

#include <kj/async-io.h>

#include <functional>
#include <string>

#include "daemon/job_threads.h"
#include "daemon/pull_job.h"
#include "daemon/tracker_fleet.h"

namespace shoal {

class ReadService;
class RevocationList;

struct LocalControlDeps {
  PullContext& pulls;  // announce_url is refreshed from the link per pull
  TrackerFleet& link;
  std::function<AgentStats()> stats;
  JobThreads& threads;                // runs pulls and seeds; outlives the promise
  ReadService& reads;                 // resolves and fetches for mounts; outlives the promise
  const RevocationList& revocations;  // tokens a mount stops reading with
};

// Listens on `socket_path` (replacing a stale socket file) and serves until
// the promise is dropped. Dropping it cancels every running call; their
// jobs end at their next poll (wait for deps.threads to drain).
kj::Promise<void> ServeLocalControl(kj::AsyncIoContext& io, const std::string& socket_path,
                                    LocalControlDeps deps);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_LOCAL_CONTROL_H_
