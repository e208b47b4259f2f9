// The tracker's /metrics: its counters and gauges, the state they are read
// from at each scrape, and the origin client's request counters.
#ifndef SHOAL_TRACKER_TRACKER_COLLECTORS_H_
#define SHOAL_TRACKER_TRACKER_COLLECTORS_H_

#include "shoal/server/metrics.h"

namespace shoal {
class Origin;
}

namespace shoal::tracker {

class AgentDirectory;
class SwarmStore;
class TorrentIndex;
class UploadLeases;
struct TrackerMetrics;
struct TrackerOptions;

// What a scrape reads. Every reference must outlive the registry.
struct CollectorSources {
  const TrackerMetrics& metrics;
  const TrackerOptions& options;  // the replica count and origin budget, as gauges
  AgentDirectory& agents;
  SwarmStore& swarm;
  TorrentIndex& torrents;
  UploadLeases& leases;
  Origin& origin;
};

void AddTrackerCollectors(MetricsRegistry& metrics, const CollectorSources& sources);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TRACKER_COLLECTORS_H_
