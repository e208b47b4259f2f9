// TrackerOptions: every setting of shoal-tracker, with its default.
// The flag and the config-file key of each field share its name.
#ifndef SHOAL_TRACKER_TRACKER_OPTIONS_H_
#define SHOAL_TRACKER_TRACKER_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/origin_options.h"
#include "shoal/server/http_limits.h"
#include "shoal/status.h"

namespace shoal::tracker {

// How agents admit each other as peers, one setting per cluster.
enum class PeerSecurity {
  // Peers are admitted by certificates from the cluster's peer CA (kept in
  // data_dir) and speak TLS.
  kTls,
  // The same certificates, but torrents are plain BitTorrent: each peer
  // proves membership in the extension handshake before any piece moves.
  kAuth,
  // Plain BitTorrent with no admission, for trusted networks.
  kOff,
};
// "tls", "auth" or "off".
const char* PeerSecurityName(PeerSecurity s);

// Mirroring namespaces of another Shoal cluster (--follow): its versions
// and tags are copied here as they are published there.
struct FollowOptions {
  std::string upstream;                 // the upstream's tracker RPC address(es); empty: none
  std::vector<std::string> namespaces;  // mirrored; read-only here
  std::string token;                    // a read token of the upstream's for those namespaces
  std::string ca_file;                  // PEM CA for an upstream that speaks TLS
  std::string key_hex;                  // the upstream's signing key, pinned; empty: as it says
  OriginOptions origin;                 // the upstream's origin, read for the chunks
  uint64_t rate_bytes = 0;              // copy bandwidth, bytes a second; 0: unlimited
  int parallelism = 4;                  // chunks copied at once
  uint32_t wait_ms = 2000;              // longest watch: how soon the follower notices a stop
  int64_t retry_max_ms = 30000;         // longest wait between attempts after a failure
  bool warm = false;                    // a version copied here is warmed onto its owners

  bool enabled() const { return !upstream.empty(); }
  // True if `ns` is mirrored: it takes no publish or tag here.
  bool Mirrors(const std::string& ns) const;
  Status Validate() const;
};

struct TrackerOptions {
  std::string data_dir = "/var/lib/shoal-tracker";  // LevelDB, token secret, signing key
  // The token secret, signing key and peer CA; empty: data_dir. Every
  // tracker of a fleet mounts the same one (a Kubernetes Secret, say).
  std::string secrets_dir;
  // Where the registry lives: "" (LevelDB in data_dir) or
  // "etcd://host:port,.../prefix" (etcd+https:// for TLS), shared by a fleet.
  std::string registry;
  std::string registry_ca_file;                // PEM CA for etcd+https://; empty: the system's
  std::string rpc_listen = "127.0.0.1:7400";   // Cap'n Proto RPC; port 0 picks one
  std::string http_listen = "127.0.0.1:7401";  // /healthz, /metrics, /v1 JSON, /announce
  std::string port_file;                       // if set, "rpc_port http_port" is written here
  OriginOptions origin;                        // where chunks live
  int64_t upload_lease_ms = 10 * 60 * 1000;    // how long a publish may hold a chunk upload
  int64_t publish_lease_ms = 60 * 1000;        // a version committed before its upload ended fails
                                               // unless its publisher renews within this
  int64_t gc_grace_ms = 24 * 3600 * 1000;      // unreferenced chunks younger than this stay
  uint32_t keep_versions = 0;                  // per model, oldest untagged pruned; 0 = all
  int origin_parallelism = 16;                 // concurrent origin HEADs when checking chunks
  int blocking_threads = 4;                    // threads for origin and scan work
  int64_t registry_poll_ms = 1000;  // how often to read what other trackers committed or revoked
  int64_t heartbeat_ms = 2000;      // agents heartbeat this often; dropped after 3 misses
  double heartbeat_budget = 2500;   // heartbeats a second; more agents are told longer intervals
  int64_t announce_interval_ms = 5000;  // how often agents re-announce; peers expire after 3x
  int64_t seed_announce_interval_ms =
      60000;                            // how often a peer holding the whole file does; 3x likewise
  uint32_t origin_budget = 64;          // origin fetches in flight across the cluster
  uint32_t fetches_per_agent = 2;       // of those, at most this many on one agent
  bool pace_fetches_per_agent = false;  // learn each agent's cap, from 1 up to fetches_per_agent
  int64_t fetch_done_grace_ms = 15000;  // a chunk fetched this recently is not fetched again
  uint32_t replicas = 1;                // owners per chunk; 2..R copy it from the swarm
  int64_t rpc_auth_timeout_ms = 10000;  // an RPC connection must authenticate within this
  int64_t rpc_message_timeout_ms =
      30000;  // an RPC message must arrive whole within this of its first byte
  uint32_t rpc_max_unauthenticated = 256;  // RPC connections not yet authenticated; more are closed
  uint32_t rpc_max_unauthenticated_per_client = 32;  // ... of them from one IP address
  uint32_t rpc_max_connections = 16384;           // RPC connections open at once; more are closed
  uint32_t rpc_max_connections_per_client = 128;  // ... from one IP address
  int rpc_threads = 0;           // event loops serving RPC connections; 0: cores - 1, 1 to 4
  HttpLimits http;               // bounds on the HTTP port's clients (shoal/server/http_limits.h)
  uint64_t max_swarms = 200000;  // torrents with live peers; announces starting more are refused
  uint64_t max_swarm_peers = 4000000;  // live peers over all swarms; new ones beyond are refused
  // How agents admit each other as peers (see PeerSecurity).
  PeerSecurity peer_security = PeerSecurity::kTls;
  int64_t peer_cert_ttl_ms = 12 * 3600 * 1000;  // agents' certificates last this long
  // If both are set, the RPC and HTTP ports speak TLS with this certificate
  // chain and key (PEM); clients verify it against their CA file.
  std::string tls_cert_file;
  std::string tls_key_file;
  FollowOptions follow;  // namespaces mirrored from another cluster

  Status Validate() const;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TRACKER_OPTIONS_H_
