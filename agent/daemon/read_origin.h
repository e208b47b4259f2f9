// How reads get chunks no peer offers: the way pulls do. The chunks are
// asked of the tracker, which orders each from its owner within the
// cluster's origin budget (tracker/scheduler/fetch_scheduler.h), and the read waits for
// them to arrive here from the owner. Only while the tracker cannot be
// reached, or when the owners have not delivered within a bound, does this
// agent read the origin itself.
#ifndef SHOAL_AGENT_DAEMON_READ_ORIGIN_H_
#define SHOAL_AGENT_DAEMON_READ_ORIGIN_H_

#include "daemon/agent_options.h"
#include "read/read_fetcher.h"
#include "shoal/chunk_store.h"

namespace shoal {

// Returns OK once the chunks are stored here, or Unavailable (the tracker
// is unreachable, or owners did not deliver within
// MissingChunkPolicy::kReadOwnerWaitMs): the ReadFetcher
// then reads the origin itself, if it has one. Everything passed in must
// outlive the hook.
ReadFetcher::OriginRequest OwnerPacedOrigin(const AgentOptions& options, ChunkStore& store);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_READ_ORIGIN_H_
