// AgentOptions: every setting of shoald, with its default. A flag and its
// config-file key share the field's name.
#ifndef SHOAL_AGENT_DAEMON_AGENT_OPTIONS_H_
#define SHOAL_AGENT_DAEMON_AGENT_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/missing_chunk_policy.h"
#include "shoal/origin_options.h"
#include "shoal/server/http_limits.h"
#include "shoal/status.h"
#include "shoal/tracker_endpoint.h"

namespace shoal {

struct AgentOptions {
  std::string name;                           // node name; empty = the host name
  std::string zone;                           // topology label for peer preference
  TrackerEndpoint tracker;                    // the tracker's RPC, and the CA to trust it by
  std::string token;                          // agent token: read on every namespace ('*')
  std::string cache_dir = "/var/lib/shoald";  // chunk store and its index
  uint64_t cache_bytes = 100ull << 30;        // cache budget (bytes)
  std::string peer_listen = "0.0.0.0:6881";   // BitTorrent listen address; port 0 picks one
  // Peer sessions, each with its own network thread, on peer_listen's port
  // and the ones after it; 0 = DefaultPeerSessions().
  int peer_sessions = 0;
  std::string http_listen = "127.0.0.1:7402";              // /metrics, /healthz and reads
  std::string control_socket = "/run/shoald/shoald.sock";  // the local CLI's endpoint
  std::string port_file;              // if set: "peer_port http_port" once listening
  OriginOptions origin;               // where chunks no peer has come from
  int64_t origin_fallback_ms = 3000;  // wait this long for a peer before the origin
  int origin_parallelism = 4;         // origin GETs in flight per pull
  int disk_threads = 2;               // disk I/O workers of the transfer engine
  int peer_handshake_timeout_s = 10;  // a peer connection must finish its handshake within this
  int peer_timeout_s = 12;            // a peer connection silent this long is closed
  uint64_t peer_upload_rate = 0;      // bytes per second to all peers; 0 = no limit
  int peer_message_stall_s = 10;      // a begun peer message must progress within this
  // The hand-on (p2p/piece_holds.h): a chunk read from the origin is served
  // only to its next `hand_on_owners` owners on the ring (match the
  // tracker's --replicas minus 1) for up to `hand_on_hold_ms`, or until one
  // holds it. 0 = off.
  int hand_on_owners = 0;
  int64_t hand_on_hold_ms = 8000;
  std::vector<std::string> labels;  // "key=value", for `shoal warm --nodes key=value`
  int http_threads = 2;             // HTTP I/O threads (reads never hold one while waiting)
  bool read_anonymous = false;      // reads without credentials from loopback use `token`
  int64_t read_cache_ms = 10000;    // how long a (token, model) resolution is reused
  int64_t read_origin_wait_ms =
      500;  // a read's piece no peer offers waits this long, unless the swarm is empty
  int read_ahead_pieces = 4;  // pieces after the one a reader waits for to fetch too
  int64_t read_first_byte_timeout_ms =
      45000;                // a read whose first chunk is not here by then gets 503
  bool cache_sync = true;   // fsync each chunk before it becomes visible (see StoreOptions::sync)
  std::string http_socket;  // if set, the HTTP routes on this unix socket too
  HttpLimits http;  // bounds on the HTTP clients of every listener (shoal/server/http_limits.h)
  uint32_t read_max_per_token = 64;  // reads in flight per token; more get 429 (S3: 503 SlowDown)
  // Host names that, after "{bucket}.", make an S3 request virtual-host style.
  std::vector<std::string> s3_virtual_hosts = {"localhost"};
  // If set, the HTTP routes over TLS on this address too, for pods on other
  // nodes, with this certificate chain and key (PEM).
  std::string https_listen;
  std::string https_cert_file;
  std::string https_key_file;
  // If set, the Hugging Face–style hub API on this address (HF_ENDPOINT for
  // the hub's clients), and the organisations that name other namespaces,
  // "org=namespace".
  std::string hub_listen;
  std::vector<std::string> hub_namespaces;
  int64_t stall_timeout_ms = 300000;         // a pull or warm that gains no byte this long fails
  std::string control_socket_mode = "0660";  // the control socket's permission bits (octal)
  std::string control_socket_group;          // the control socket's group; empty: the agent's own

  Status Validate() const;
  // The settings above that shape how chunks no peer offers are fetched.
  MissingChunkOptions MissingChunks() const;
};

// The peer sessions an agent runs without --peer-sessions: one per two
// cores, 1 to 64 (see docs/scale.md).
int DefaultPeerSessions();

// options.peer_sessions, or DefaultPeerSessions() for 0.
int PeerSessionsOf(const AgentOptions& options);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_AGENT_OPTIONS_H_
