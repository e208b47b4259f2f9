// TrackerContext: what every tracker service needs, built once by main()
// and passed to the services' constructors, so tests can build their own.
#ifndef SHOAL_TRACKER_TRACKER_CONTEXT_H_
#define SHOAL_TRACKER_TRACKER_CONTEXT_H_

#include <chrono>
#include <map>
#include <string>

#include "shoal/proto/tracker.capnp.h"

#include "agent_directory.h"
#include "blocking_pool.h"
#include "fetch_scheduler.h"
#include "registry_store.h"
#include "swarm_store.h"
#include "torrent_index.h"
#include "shoal/manifest_signer.h"
#include "shoal/origin.h"
#include "shoal/token.h"
#include "tracker_metrics.h"
#include "tracker_options.h"
#include "upload_leases.h"

namespace shoal::tracker {

struct TrackerContext {
  TrackerContext(TrackerOptions opts, RegistryStore& s, const TokenAuthority& t,
                 const ManifestSigner& sg, Origin& o)
      : options(std::move(opts)), store(s), tokens(t), signer(sg), origin(o),
        pool(options.blocking_threads),
        swarm(3 * options.announce_interval_ms, 3 * options.seed_announce_interval_ms,
              SwarmLimits{options.max_swarms, options.max_swarm_peers}),
        agents(options.heartbeat_ms) {}

  const TrackerOptions options;
  RegistryStore& store;
  const TokenAuthority& tokens;
  const ManifestSigner& signer;
  Origin& origin;
  UploadLeases leases;
  TrackerMetrics metrics;
  BlockingPool pool;
  SwarmStore swarm;
  TorrentIndex torrents;  // which namespaces may announce which torrents
  AgentDirectory agents;
  uint16_t http_port = 0;  // set once the HTTP server listens
  // Each live agent's control capability. Touched only on the RPC thread.
  std::map<std::string, proto::AgentControl::Client> agent_controls;
  // Origin fetch orders; on the RPC thread too. Declared last: its orders
  // hold references to the rest.
  FetchScheduler fetches{*this};
};

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TRACKER_CONTEXT_H_
