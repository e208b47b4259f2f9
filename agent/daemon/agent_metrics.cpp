#include "daemon/agent_metrics.h"

namespace shoal {
namespace {

// The chunk cache's size and traffic.
void WriteCacheMetrics(MetricsWriter& w, ChunkStore& store) {
  StoreStats s = store.Stats();
  w.AddGauge("shoal_agent_cache_bytes", "Bytes in the chunk cache",
             static_cast<double>(s.used_bytes));
  w.AddGauge("shoal_agent_cache_capacity_bytes", "Cache budget",
             static_cast<double>(s.capacity_bytes));
  w.AddGauge("shoal_agent_cache_chunks", "Chunks in the cache", static_cast<double>(s.chunks));
  w.AddGauge("shoal_agent_cache_pinned_bytes",
             "Cache bytes pinned by running pulls, reads and orders",
             static_cast<double>(s.pinned_bytes));
  w.AddGauge("shoal_agent_cache_reserved_bytes", "Cache bytes reserved by chunk writes in flight",
             static_cast<double>(s.reserved_bytes));
  w.AddCounter("shoal_agent_cache_hits_total", "Chunk lookups found in the cache", s.hits);
  w.AddCounter("shoal_agent_cache_misses_total", "Chunk lookups not in the cache", s.misses);
  w.AddCounter("shoal_agent_cache_evictions_total", "Chunks evicted", s.evictions);
  w.AddCounter("shoal_agent_cache_corrupt_total", "Chunks dropped for failing verification",
               s.corrupt_dropped);
  w.AddCounter("shoal_agent_cache_no_space_total",
               "Chunk writes refused for want of room that no eviction could make",
               s.no_space_refusals);
  const StoreSpace space = store.Space();
  w.AddGauge("shoal_agent_cache_degraded",
             "1 while the cache refuses writes and no eviction could make room (/healthz is 503)",
             space.refusing && !space.room ? 1 : 0);
}

// Peers: bytes, bad data, the hand-on, TLS admission.
void WriteEngineMetrics(MetricsWriter& w, TorrentEngine& engine) {
  EngineStats e = engine.Stats();
  w.AddCounter("shoal_agent_peer_bytes_total", "Payload bytes exchanged with peers", e.bytes_down,
               {{"direction", "in"}});
  w.AddCounter("shoal_agent_peer_bytes_total", "Payload bytes exchanged with peers", e.bytes_up,
               {{"direction", "out"}});
  w.AddCounter("shoal_agent_hash_failures_total", "Pieces from peers that failed their hash",
               e.hash_failures);
  w.AddCounter("shoal_agent_peers_banned_total", "Peers banned for bad data", e.peers_banned);
  w.AddCounter("shoal_agent_hand_on_holds_total",
               "Chunks read from the origin served only to their next owners for a while",
               e.pieces_held);
  w.AddCounter("shoal_agent_hand_on_requests_kept_total",
               "Other peers' requests for held chunks, refused once the hold ended",
               e.requests_kept);
  w.AddCounter("shoal_agent_hand_on_handed_total", "Holds ended by a next owner holding the chunk",
               e.holds_handed);
  w.AddCounter("shoal_agent_peers_stalled_total",
               "Peer connections closed for a handshake or message that crawled", e.peers_stalled);
  for (size_t r = 0; r < e.refused.size(); ++r) {
    w.AddCounter("shoal_agent_peer_handshakes_refused_total",
                 "Peer connections refused in the TLS handshake, by reason", e.refused[r],
                 {{"reason", PeerRefusalName(static_cast<PeerRefusal>(r))}});
  }
  w.AddGauge("shoal_agent_peer_tls", "1 if peers are admitted by certificate and speak TLS",
             e.peer_tls ? 1 : 0);
  w.AddGauge("shoal_agent_peer_auth",
             "1 if peers prove membership by certificate, then speak plain BitTorrent",
             e.peer_auth ? 1 : 0);
  for (size_t r = 0; r < e.auth_refused.size(); ++r) {
    w.AddCounter("shoal_agent_peer_auth_refused_total",
                 "Peers closed for want of a valid membership proof, by reason", e.auth_refused[r],
                 {{"reason", PeerAuthRefusalName(static_cast<PeerAuthRefusal>(r))}});
  }
  w.AddCounter("shoal_agent_peer_auth_admitted_total", "Peers admitted by a membership proof",
               e.peers_admitted);
  w.AddGauge("shoal_agent_peer_cert_expiry_timestamp_seconds",
             "When the agent's peer certificate expires (unix seconds); 0 without one",
             static_cast<double>(e.cert_not_after_ms) / 1000.0);
  w.AddGauge("shoal_agent_peers", "Connected peers", static_cast<double>(e.peers));
  w.AddGauge("shoal_agent_torrents", "Torrents in the engine", static_cast<double>(e.torrents));
  // Per peer session: how evenly the torrents and the bytes spread.
  for (size_t k = 0; k < e.sessions.size(); ++k) {
    const EngineStats::Session& s = e.sessions[k];
    const std::string session = std::to_string(k);
    w.AddCounter("shoal_agent_peer_session_bytes_total",
                 "Payload bytes exchanged with peers, by peer session", s.bytes_down,
                 {{"session", session}, {"direction", "in"}});
    w.AddCounter("shoal_agent_peer_session_bytes_total",
                 "Payload bytes exchanged with peers, by peer session", s.bytes_up,
                 {{"session", session}, {"direction", "out"}});
    w.AddGauge("shoal_agent_peer_session_peers", "Connected peers, by peer session",
               static_cast<double>(s.peers), {{"session", session}});
    w.AddGauge("shoal_agent_peer_session_torrents", "Torrents, by peer session",
               static_cast<double>(s.torrents), {{"session", session}});
    w.AddGauge("shoal_agent_peer_session_port", "The listen port of each peer session",
               static_cast<double>(s.port), {{"session", session}});
  }
}

// Origin reads, pulls, and the tracker link.
void WritePullMetrics(MetricsWriter& w, PullCounters& pulls, Origin* origin, TrackerFleet& link) {
  w.AddCounter("shoal_agent_origin_bytes_total", "Bytes fetched from the origin",
               pulls.bytes_from_origin);
  w.AddCounter("shoal_agent_origin_chunks_total", "Chunks fetched from the origin",
               pulls.origin_chunks);
  w.AddCounter("shoal_agent_origin_fetches_total", "Origin fetches by why this agent made them",
               pulls.owner_fetches, {{"reason", "owner"}});
  w.AddCounter("shoal_agent_origin_fetches_total", "Origin fetches by why this agent made them",
               pulls.takeover_fetches, {{"reason", "takeover"}});
  w.AddCounter("shoal_agent_replica_chunks_total",
               "Chunks copied from the swarm on a replica order", pulls.replica_chunks);
  w.AddCounter("shoal_agent_replica_owner_connects_total",
               "Connections a replica order asked for to the chunk's higher-ranked owners",
               pulls.replica_owner_connects);
  w.AddCounter("shoal_agent_pulls_total", "Pulls completed", pulls.pulls);
  w.AddCounter("shoal_agent_pull_failures_total", "Pulls that failed", pulls.pull_failures);
  w.AddGauge("shoal_agent_tracker_registered", "1 while registered with the tracker",
             link.registered() ? 1 : 0);
  w.AddGauge("shoal_agent_ring_epoch", "Membership epoch last seen",
             static_cast<double>(link.epoch()));
  w.AddGauge("shoal_agent_ring_following",
             "1 while heartbeats bring the ring's changes (work used the ring within a minute)",
             link.following_ring() ? 1 : 0);
  w.AddCounter("shoal_agent_announces_answered_locally_total",
               "libtorrent announces the relay answered without calling the tracker",
               link.announces_answered_locally());
  w.AddCounter("shoal_agent_swarm_changes_sent_total",
               "Swarm changes sent to the tracker in announce batches", link.swarm_changes_sent());
  if (origin != nullptr) {
    OriginCounters oc = origin->counters();
    w.AddCounter("shoal_origin_requests_total", "Origin requests, retries included",
                 oc.get.requests, {{"op", "get"}});
    w.AddCounter("shoal_origin_bytes_total", "Origin payload bytes", oc.get.bytes, {{"op", "get"}});
  }
}

void AddMetrics(MetricsRegistry& metrics, ChunkStore& store, TorrentEngine& engine,
                PullCounters& pulls, Origin* origin, TrackerFleet& link) {
  metrics.AddCollector([&, origin](MetricsWriter& w) {
    WriteCacheMetrics(w, store);
    WriteEngineMetrics(w, engine);
    WritePullMetrics(w, pulls, origin, link);
  });
}

}  // namespace

std::unique_ptr<MetricsRegistry> NewAgentMetrics(ChunkStore& store, TorrentEngine& engine,
                                                 PullCounters& pulls, Origin* origin,
                                                 TrackerFleet& link, JobThreads& control_jobs) {
  auto metrics = std::make_unique<MetricsRegistry>();
  AddMetrics(*metrics, store, engine, pulls, origin, link);
  metrics->AddCollector([&control_jobs](MetricsWriter& w) {
    w.AddGauge("shoal_agent_control_jobs",
               "Pulls and seeds running for callers of the control socket",
               static_cast<double>(control_jobs.Running()));
  });
  return metrics;
}

}  // namespace shoal
