// The tracker's counters, exported at /metrics.
// Thread-safety: plain atomics, updated from any thread.
#ifndef SHOAL_TRACKER_TRACKER_METRICS_H_
#define SHOAL_TRACKER_TRACKER_METRICS_H_

#include <atomic>
#include <cstdint>

namespace shoal::tracker {

struct TrackerMetrics {
  std::atomic<uint64_t> auth_ok{0};
  std::atomic<uint64_t> auth_denied{0};         // bad, forged or expired tokens; scope refusals
  std::atomic<uint64_t> peer_certs_issued{0};   // agents' peer certificates, at join and renewal
  std::atomic<uint64_t> peer_certs_refused{0};  // ... refused (a token no longer valid, a bad key)
  std::atomic<uint64_t> publishes{0};           // versions created
  std::atomic<uint64_t> publish_rejected{0};    // commits refused (validation, missing chunks)
  std::atomic<uint64_t> pending_commits{0};     // commits that left a version uploading
  std::atomic<uint64_t> uploads_durable{0};     // pending versions whose upload finished
  std::atomic<uint64_t> uploads_failed{0};      // ... whose publisher reported it failed
  std::atomic<uint64_t> resolves{0};
  std::atomic<uint64_t> tag_moves{0};
  std::atomic<uint64_t> deletes{0};
  std::atomic<uint64_t> chunks_planned{0};     // chunks callers were told to upload
  std::atomic<uint64_t> chunks_waited{0};      // chunks callers were told another publish has
  std::atomic<uint64_t> chunks_indexed{0};     // chunks confirmed in the origin
  std::atomic<uint64_t> duplicate_uploads{0};  // confirmed twice: a race let two uploads through
  std::atomic<uint64_t> origin_checks{0};      // HEADs to confirm a chunk
  std::atomic<uint64_t> gc_runs{0};
  std::atomic<uint64_t> gc_swept_chunks{0};
  std::atomic<uint64_t> gc_swept_bytes{0};
  std::atomic<uint64_t> announces{0};
  std::atomic<uint64_t> announce_refused_token{0};      // missing, bad or expired token
  std::atomic<uint64_t> announce_refused_malformed{0};  // bad info_hash, peer_id or number
  std::atomic<uint64_t> announce_refused_torrent{0};    // not a file the token may read
  std::atomic<uint64_t> announce_refused_full{0};       // a swarm limit was reached
  std::atomic<uint64_t> announce_batches{0};            // AgentSession.announceBatch calls
  std::atomic<uint64_t> announce_batch_entries{0};      // entries in them
  std::atomic<uint64_t> ring_changes_sent{0};           // to agents following the ring
  std::atomic<uint64_t> fetch_orders{0};                // orders sent to chunk owners
  std::atomic<uint64_t> fetch_order_chunks{0};          // chunks in those orders
  std::atomic<uint64_t> fetch_order_failures{0};
  std::atomic<uint64_t> need_requests{0};     // Registry.need calls
  std::atomic<uint64_t> need_chunks{0};       // chunks asked for in them
  std::atomic<uint64_t> owner_fetches{0};     // chunks fetched from the origin by their first owner
  std::atomic<uint64_t> takeover_fetches{0};  // ... by a later owner, after a takeover
  std::atomic<uint64_t> takeovers{0};         // orders handed to the next owner
  std::atomic<uint64_t> origin_fetch_bytes{0};  // bytes owners reported fetching
  std::atomic<uint64_t> warms{0};
  std::atomic<uint64_t> prefetch_orders{0};   // whole-version orders to nodes named by warm --nodes
  std::atomic<uint64_t> replica_orders{0};    // chunks ordered copied from the swarm to owners 2..R
  std::atomic<uint64_t> replica_failures{0};  // ... that the owner could not get in time
  // RPC connections closed by the listener, by reason (rpc_listener.h).
  std::atomic<uint64_t> rpc_refused_too_large{0};        // a message over the connection's limit
  std::atomic<uint64_t> rpc_refused_message_timeout{0};  // a message not complete in time
  std::atomic<uint64_t> rpc_refused_auth_timeout{0};     // no token presented in time
  std::atomic<uint64_t> rpc_refused_unauthenticated{0};  // too many connections without a token
  std::atomic<uint64_t> rpc_refused_unauthenticated_per_client{0};  // ... from one IP address
  std::atomic<uint64_t> rpc_evicted_unauthenticated{0};             // closed to keep a newcomer in
  std::atomic<uint64_t> rpc_refused_connections{0};                 // too many connections in all
  std::atomic<uint64_t> rpc_refused_per_client{0};                  // too many from one IP address
  std::atomic<uint64_t> rpc_refused_tls_handshake{0};  // a TLS handshake failed or was too slow
  std::atomic<uint64_t> rpc_unauthenticated{0};        // gauge: connections without a token yet
  std::atomic<uint64_t> rpc_connections{0};            // gauge: open RPC connections
  std::atomic<uint64_t> rpc_accept_errors{0};          // failed accepts (out of descriptors)
  // Gauges the fetch scheduler keeps current.
  std::atomic<uint64_t> fetch_queue{0};        // chunks waiting for an order
  std::atomic<uint64_t> fetches_in_flight{0};  // orders sent, not yet answered
  std::atomic<uint64_t> replicas_queued{0};    // replica orders waiting or in flight
  std::atomic<uint64_t> ring_members{0};       // agents chunks are owned by
  std::atomic<int64_t> takeover_timeout_ms{0};
  // Gauges the fleet loop keeps current (tracker_main.cpp).
  std::atomic<uint64_t> fleet_trackers{1};       // live trackers sharing the registry
  std::atomic<uint64_t> origin_budget_share{0};  // origin orders this tracker allows in flight
  // A mirror of another cluster's namespaces (--follow; federation/).
  std::atomic<uint64_t> follow_connected{0};        // gauge: 1 while the upstream answers
  std::atomic<uint64_t> follow_versions_behind{0};  // gauge: upstream versions not copied yet
  std::atomic<uint64_t> follow_bytes_behind{0};     // gauge: bytes left to copy for them
  std::atomic<int64_t> follow_oldest_behind_ms{0};  // gauge: upstream commit time of the oldest
                                                    // version not copied yet; 0: caught up
  std::atomic<uint64_t> follow_events{0};           // changes the upstream's watch reported
  std::atomic<uint64_t> follow_versions_copied{0};  // versions committed here from upstream
  std::atomic<uint64_t> follow_tag_moves{0};        // tags moved here to follow upstream's
  std::atomic<uint64_t> follow_chunks_copied{0};    // chunks copied origin to origin
  std::atomic<uint64_t> follow_bytes_copied{0};
  std::atomic<uint64_t> follow_chunks_present{0};  // chunks of copied versions already here
  std::atomic<uint64_t> follow_chunks_refused{0};  // upstream chunks whose bytes were not their ID
  std::atomic<uint64_t> follow_errors{0};          // failed connections, copies and commits
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TRACKER_METRICS_H_
