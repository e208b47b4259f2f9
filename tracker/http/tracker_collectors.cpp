#include "http/tracker_collectors.h"

#include <algorithm>
#include <utility>

#include "agents/agent_directory.h"
#include "common/tracker_metrics.h"
#include "common/tracker_options.h"
#include "shoal/origin.h"
#include "shoal/utc_time.h"
#include "storage/upload_leases.h"
#include "swarm/swarm_store.h"
#include "swarm/torrent_index.h"

namespace shoal::tracker {
namespace {

// Token checks and registry operations.
void CollectRegistry(MetricsWriter& w, const TrackerMetrics& m) {
  w.AddCounter("shoal_tracker_auth_total", "Token checks at authentication", m.auth_ok,
               {{"result", "ok"}});
  w.AddCounter("shoal_tracker_auth_total", "Token checks at authentication", m.auth_denied,
               {{"result", "denied"}});
  w.AddCounter("shoal_tracker_peer_certs_total", "Agents' peer certificates asked for",
               m.peer_certs_issued, {{"result", "issued"}});
  w.AddCounter("shoal_tracker_peer_certs_total", "Agents' peer certificates asked for",
               m.peer_certs_refused, {{"result", "refused"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.publishes,
               {{"op", "publish"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.publish_rejected,
               {{"op", "publish_rejected"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.pending_commits,
               {{"op", "publish_pending"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.uploads_durable,
               {{"op", "upload_durable"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.uploads_failed,
               {{"op", "upload_failed"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.resolves,
               {{"op", "resolve"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.tag_moves,
               {{"op", "tag"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.deletes,
               {{"op", "delete"}});
  w.AddCounter("shoal_tracker_upload_chunks_total", "Chunks in upload plans", m.chunks_planned,
               {{"decision", "upload"}});
  w.AddCounter("shoal_tracker_upload_chunks_total", "Chunks in upload plans", m.chunks_waited,
               {{"decision", "wait"}});
  w.AddCounter("shoal_tracker_chunks_indexed_total", "Chunks confirmed in the origin",
               m.chunks_indexed);
  w.AddCounter("shoal_tracker_duplicate_uploads_total",
               "Chunks reported stored that the origin already had", m.duplicate_uploads);
  w.AddCounter("shoal_tracker_origin_checks_total", "HEAD requests to confirm chunks",
               m.origin_checks);
  w.AddCounter("shoal_tracker_gc_runs_total", "Completed GC sweeps", m.gc_runs);
  w.AddCounter("shoal_tracker_gc_swept_chunks_total", "Chunks deleted by GC", m.gc_swept_chunks);
  w.AddCounter("shoal_tracker_gc_swept_bytes_total", "Bytes deleted by GC", m.gc_swept_bytes);
}

// The mirror of another cluster (--follow), when there is one.
void CollectFollow(MetricsWriter& w, const TrackerMetrics& m, const TrackerOptions& options) {
  if (!options.follow.enabled()) return;
  w.AddGauge("shoal_tracker_follow_connected", "1 while the upstream tracker answers",
             static_cast<double>(m.follow_connected));
  w.AddGauge("shoal_tracker_follow_versions_behind", "Upstream versions not copied here yet",
             static_cast<double>(m.follow_versions_behind));
  w.AddGauge("shoal_tracker_follow_bytes_behind", "Bytes left to copy for those versions",
             static_cast<double>(m.follow_bytes_behind));
  const int64_t oldest = m.follow_oldest_behind_ms;
  w.AddGauge(
      "shoal_tracker_follow_lag_seconds",
      "Seconds since the upstream committed the oldest version not copied here; 0 when "
      "caught up",
      oldest > 0 ? std::max<double>(0, static_cast<double>(NowMs() - oldest) / 1000.0) : 0.0);
  w.AddCounter("shoal_tracker_follow_events_total", "Changes the upstream's watch reported",
               m.follow_events);
  w.AddCounter("shoal_tracker_follow_versions_copied_total", "Versions committed from upstream",
               m.follow_versions_copied);
  w.AddCounter("shoal_tracker_follow_tag_moves_total", "Tags moved to follow the upstream's",
               m.follow_tag_moves);
  const char* kChunks = "Chunks of mirrored versions, by what the mirror did with them";
  w.AddCounter("shoal_tracker_follow_chunks_total", kChunks, m.follow_chunks_copied,
               {{"result", "copied"}});
  w.AddCounter("shoal_tracker_follow_chunks_total", kChunks, m.follow_chunks_present,
               {{"result", "present"}});
  w.AddCounter("shoal_tracker_follow_chunks_total", kChunks, m.follow_chunks_refused,
               {{"result", "refused"}});
  w.AddCounter("shoal_tracker_follow_bytes_copied_total",
               "Bytes copied from the upstream's origin to this one", m.follow_bytes_copied);
  w.AddCounter("shoal_tracker_follow_errors_total",
               "Failed upstream connections, copies and commits", m.follow_errors);
}

void CollectAnnounces(MetricsWriter& w, const TrackerMetrics& m) {
  w.AddCounter("shoal_tracker_announces_total", "Announce requests", m.announces);
  w.AddCounter("shoal_tracker_announce_batches_total", "AgentSession.announceBatch calls",
               m.announce_batches);
  w.AddCounter("shoal_tracker_announce_batch_entries_total", "Swarm entries in announce batches",
               m.announce_batch_entries);
  const char* kAnnounceRefused = "Announces answered with a failure, by reason";
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused, m.announce_refused_token,
               {{"reason", "token"}});
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused,
               m.announce_refused_malformed, {{"reason", "malformed"}});
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused,
               m.announce_refused_torrent, {{"reason", "torrent"}});
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused, m.announce_refused_full,
               {{"reason", "full"}});
}

// Origin fetch orders, replicas and the ring they go by.
void CollectFetches(MetricsWriter& w, const TrackerMetrics& m, const TrackerOptions& options,
                    AgentDirectory& agents) {
  w.AddCounter("shoal_tracker_fetch_orders_total", "Fetch orders sent to chunk owners",
               m.fetch_orders);
  w.AddCounter("shoal_tracker_fetch_order_chunks_total", "Chunks in fetch orders",
               m.fetch_order_chunks);
  w.AddCounter("shoal_tracker_fetch_order_failures_total", "Fetch orders that failed",
               m.fetch_order_failures);
  w.AddCounter("shoal_tracker_need_requests_total", "Asks for chunks no peer offered",
               m.need_requests);
  w.AddCounter("shoal_tracker_need_chunks_total", "Chunks in those asks", m.need_chunks);
  w.AddCounter("shoal_tracker_origin_fetches_total",
               "Chunks fetched from the origin on the tracker's order, by reason", m.owner_fetches,
               {{"reason", "owner"}});
  w.AddCounter("shoal_tracker_origin_fetches_total",
               "Chunks fetched from the origin on the tracker's order, by reason",
               m.takeover_fetches, {{"reason", "takeover"}});
  w.AddCounter("shoal_tracker_origin_fetch_bytes_total",
               "Bytes owners fetched from the origin on order", m.origin_fetch_bytes);
  w.AddCounter("shoal_tracker_takeovers_total",
               "Fetch orders handed to the next owner (failure or timeout)", m.takeovers);
  w.AddCounter("shoal_tracker_warms_total", "Warm requests", m.warms);
  w.AddCounter("shoal_tracker_prefetch_orders_total",
               "Whole-version orders to nodes named by warm --nodes", m.prefetch_orders);
  w.AddCounter("shoal_tracker_replica_orders_total",
               "Chunks ordered copied from the swarm to owners 2..R", m.replica_orders);
  w.AddCounter("shoal_tracker_replica_failures_total",
               "Replica orders the owner could not carry out", m.replica_failures);
  w.AddGauge("shoal_tracker_replicas_queued", "Replica orders waiting or in flight",
             static_cast<double>(m.replicas_queued));
  w.AddGauge("shoal_tracker_replicas", "Owners per chunk", static_cast<double>(options.replicas));
  w.AddGauge("shoal_tracker_fetch_queue", "Chunks waiting for a fetch order",
             static_cast<double>(m.fetch_queue));
  w.AddGauge("shoal_tracker_fetches_in_flight", "Fetch orders sent and not yet answered",
             static_cast<double>(m.fetches_in_flight));
  w.AddGauge("shoal_tracker_origin_budget", "Fetch orders allowed in flight across the cluster",
             static_cast<double>(options.origin_budget));
  w.AddGauge("shoal_tracker_origin_budget_share",
             "Fetch orders this tracker allows in flight: its share of the cluster's budget",
             static_cast<double>(m.origin_budget_share));
  w.AddGauge("shoal_tracker_fleet_trackers", "Live trackers sharing this tracker's registry",
             static_cast<double>(m.fleet_trackers));
  w.AddGauge("shoal_tracker_takeover_timeout_seconds",
             "Time after which an order goes to the next owner",
             static_cast<double>(m.takeover_timeout_ms) / 1000.0);
  w.AddGauge("shoal_tracker_ring_members", "Agents on the ring of chunk owners",
             static_cast<double>(m.ring_members));
  const AgentDirectory::Counts counts = agents.Count(NowMs());
  w.AddGauge("shoal_tracker_agents", "Live registered agents", static_cast<double>(counts.members));
  w.AddGauge("shoal_tracker_agents_away",
             "Live agents registered as away: another tracker of the fleet is their home",
             static_cast<double>(counts.away));
  w.AddGauge("shoal_tracker_heartbeat_interval_seconds",
             "How often this tracker tells its home agents to heartbeat (longer as they grow "
             "past --heartbeat-budget)",
             static_cast<double>(agents.IntervalMs()) / 1000.0);
  w.AddGauge("shoal_tracker_ring_epoch", "Membership epoch", static_cast<double>(agents.epoch()));
  w.AddCounter("shoal_tracker_ring_changes_sent_total",
               "Ring changes sent to agents following the ring (heartbeats and ring() deltas)",
               m.ring_changes_sent);
}

// RPC connections the listener closed.
void CollectRpc(MetricsWriter& w, const TrackerMetrics& m) {
  const char* kRefused = "RPC connections the tracker closed, by reason";
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused, m.rpc_refused_too_large,
               {{"reason", "message_too_large"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused,
               m.rpc_refused_message_timeout, {{"reason", "message_timeout"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused, m.rpc_refused_auth_timeout,
               {{"reason", "auth_timeout"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused,
               m.rpc_refused_unauthenticated, {{"reason", "too_many_unauthenticated"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused,
               m.rpc_refused_unauthenticated_per_client,
               {{"reason", "too_many_unauthenticated_from_client"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused,
               m.rpc_evicted_unauthenticated, {{"reason", "evicted_unauthenticated"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused, m.rpc_refused_connections,
               {{"reason", "too_many_connections"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused, m.rpc_refused_per_client,
               {{"reason", "too_many_from_client"}});
  w.AddCounter("shoal_tracker_rpc_accept_errors_total",
               "Failed accepts on the RPC port (out of descriptors, most likely)",
               m.rpc_accept_errors);
  w.AddGauge("shoal_tracker_rpc_connections", "Open RPC connections, authenticated or not",
             static_cast<double>(m.rpc_connections));
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused, m.rpc_refused_tls_handshake,
               {{"reason", "tls_handshake"}});
  w.AddGauge("shoal_tracker_rpc_unauthenticated_connections",
             "RPC connections that have not authenticated yet",
             static_cast<double>(m.rpc_unauthenticated));
}

// Swarms, torrents, uploads in progress and the origin client's counters.
void CollectState(MetricsWriter& w, const CollectorSources& src) {
  SwarmStats ss = src.swarm.Stats(NowMs());
  w.AddGauge("shoal_tracker_swarms", "Torrents with at least one live peer",
             static_cast<double>(ss.swarms));
  w.AddGauge("shoal_tracker_swarm_peers", "Live peers summed over swarms",
             static_cast<double>(ss.peers));
  w.AddGauge("shoal_tracker_swarm_held_peers",
             "Swarm peers agent sessions hold (announceBatch), until the session ends",
             static_cast<double>(ss.held));
  w.AddGauge("shoal_tracker_torrents",
             "Distinct file torrents of published versions, which may be announced",
             static_cast<double>(src.torrents.size()));
  w.AddGauge("shoal_tracker_upload_leases",
             "Chunk uploads this tracker has leased to its publishers, not yet stored or expired",
             static_cast<double>(src.leases.held_here(NowMs())));
  OriginCounters oc = src.origin.counters();
  const std::pair<const char*, const OpCounters*> ops[] = {{"get", &oc.get},
                                                           {"put", &oc.put},
                                                           {"head", &oc.head},
                                                           {"list", &oc.list},
                                                           {"delete", &oc.del}};
  for (const auto& [op, c] : ops) {
    w.AddCounter("shoal_origin_requests_total", "Origin requests, retries included", c->requests,
                 {{"op", op}});
    w.AddCounter("shoal_origin_bytes_total", "Origin payload bytes", c->bytes, {{"op", op}});
    w.AddCounter("shoal_origin_errors_total", "Origin calls that failed", c->errors, {{"op", op}});
  }
}

}  // namespace

void AddTrackerCollectors(MetricsRegistry& metrics, const CollectorSources& sources) {
  metrics.AddCollector([src = sources](MetricsWriter& w) {
    const TrackerMetrics& m = src.metrics;
    CollectRegistry(w, m);
    CollectAnnounces(w, m);
    CollectFollow(w, m, src.options);
    CollectFetches(w, m, src.options, src.agents);
    CollectRpc(w, m);
    CollectState(w, src);
  });
}

}  // namespace shoal::tracker
