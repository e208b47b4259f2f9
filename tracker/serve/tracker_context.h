// TrackerContext: the tracker's parts, built once by main() and handed out
// piecemeal. Each service takes only the parts it uses (its constructor or
// function says which), so a test can build a service without the rest.
#ifndef SHOAL_TRACKER_TRACKER_CONTEXT_H_
#define SHOAL_TRACKER_TRACKER_CONTEXT_H_

#include <cstdint>
#include <memory>

#include "agents/agent_directory.h"
#include "agents/ring_snapshot.h"
#include "auth/peer_certs.h"
#include "auth/token_verifier.h"
#include "common/blocking_pool.h"
#include "common/change_signal.h"
#include "common/tracker_metrics.h"
#include "common/tracker_options.h"
#include "registry/registry_store.h"
#include "scheduler/agent_controls.h"
#include "scheduler/fetch_scheduler.h"
#include "scheduler/version_chunks.h"
#include "shoal/manifest_signer.h"
#include "shoal/origin.h"
#include "shoal/peer_cert.h"
#include "shoal/token.h"
#include "shoal/utc_time.h"
#include "storage/registry_follower.h"
#include "storage/upload_leases.h"
#include "swarm/swarm_store.h"
#include "swarm/torrent_index.h"

namespace shoal::tracker {

// The fetch scheduler's settings among the tracker's.
inline FetchPolicy FetchPolicyOf(const TrackerOptions& o) {
  return FetchPolicy{o.origin_budget, o.fetches_per_agent, o.fetch_done_grace_ms, o.replicas,
                     o.pace_fetches_per_agent};
}

struct TrackerContext {
  TrackerContext(TrackerOptions opts, RegistryStore& s, const TokenAuthority& t,
                 const ManifestSigner& sg, const PeerCa* ca, Origin& o)
      : options(std::move(opts)),
        store(s),
        authority(t),
        tokens(t, s),
        signer(sg),
        peer_ca(ca),
        origin(o),
        leases_owner(NewUploadLeases(options.registry, s)),
        leases(*leases_owner),
        pool(options.blocking_threads),
        swarm(3 * options.announce_interval_ms, 3 * options.seed_announce_interval_ms,
              SwarmLimits{options.max_swarms, options.max_swarm_peers}),
        // Only TLS torrents carry the CA; auth and off torrents are plain.
        torrents(ca != nullptr && options.peer_security == PeerSecurity::kTls ? ca->cert_pem()
                                                                              : std::string()),
        agents(options.heartbeat_ms, options.heartbeat_budget),
        version_chunks(s) {
    store.SetChangeSignal(&changes);
  }
  ~TrackerContext() { store.SetChangeSignal(nullptr); }
  TrackerContext(const TrackerContext&) = delete;
  TrackerContext& operator=(const TrackerContext&) = delete;

  const TrackerOptions options;
  // Bumped by every registry write (and by writes other trackers made,
  // when the follower below sees them): wakes Registry.watch.
  ChangeSignal changes;
  RegistryStore& store;
  const TokenAuthority& authority;
  TokenVerifier tokens;  // signature, expiry and revocations; Load() before serving
  const ManifestSigner& signer;
  const PeerCa* peer_ca;  // null: peers speak plain BitTorrent
  Origin& origin;
  const std::unique_ptr<UploadLeases> leases_owner;
  UploadLeases& leases;  // in memory, or in the registry a fleet shares
  TrackerMetrics metrics;
  BlockingPool pool;
  SwarmStore swarm;
  TorrentIndex torrents;  // which namespaces may announce which torrents
  PeerCerts peer_certs{peer_ca, options.peer_cert_ttl_ms, tokens, metrics,
                       options.peer_security == PeerSecurity::kAuth};
  AgentDirectory agents;
  RingSnapshots ring_snapshots{agents};
  uint16_t http_port = 0;  // set once the HTTP server listens
  // Each live agent's control capability, on its connection's loop.
  AgentControls controls;
  StoredVersionChunks version_chunks;
  // Keeps torrents and tokens' revocations in step with the registry,
  // which other trackers may write too.
  RegistryFollower follower{store, torrents, tokens};
  // The loop the context is built on, where the fetch scheduler runs; RPC
  // connections on other loops reach the scheduler through it.
  const kj::Executor& scheduler_loop = kj::getCurrentThreadExecutor();
  // Origin fetch orders, on scheduler_loop. Declared last: its orders hold
  // references to the rest.
  FetchScheduler fetches{FetchPolicyOf(options), agents, controls, version_chunks, metrics};
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TRACKER_CONTEXT_H_
