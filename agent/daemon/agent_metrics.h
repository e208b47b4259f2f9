// The agent's own /metrics families: the chunk cache, the transfer engine,
// origin traffic, pulls, the tracker link and the control socket's jobs.
// The read service adds its families to the same registry.
#ifndef SHOAL_AGENT_DAEMON_AGENT_METRICS_H_
#define SHOAL_AGENT_DAEMON_AGENT_METRICS_H_

#include <memory>

#include "daemon/job_threads.h"
#include "daemon/pull_job.h"
#include "daemon/tracker_fleet.h"
#include "p2p/torrent_engine.h"
#include "shoal/chunk_store.h"
#include "shoal/origin.h"
#include "shoal/server/metrics.h"

namespace shoal {

// A registry that samples each source on every scrape. Every source must
// outlive the registry; `origin` may be null (no origin families then).
std::unique_ptr<MetricsRegistry> NewAgentMetrics(ChunkStore& store, TorrentEngine& engine,
                                                 PullCounters& pulls, Origin* origin,
                                                 TrackerFleet& link, JobThreads& control_jobs);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_AGENT_METRICS_H_
