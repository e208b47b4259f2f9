// EngineOptions and EngineStats: how a TorrentEngine is set up, and what it
// reports for /metrics.
#ifndef SHOAL_AGENT_P2P_ENGINE_OPTIONS_H_
#define SHOAL_AGENT_P2P_ENGINE_OPTIONS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

// Who the engine is to its peers. With a CA, every torrent is an SSL torrent
// of that CA (shoal/file_torrent_info.h): connections are TLS, and both ends
// must present a certificate the CA signed and that has not expired. With a
// CA and `auth_only`, torrents are plain and each end proves holding such a
// certificate in the extension handshake before any piece moves
// (peer_auth_plugin.h). Without a CA, peers speak plain BitTorrent (a
// cluster whose network is trusted).
struct PeerIdentity {
  std::string ca_pem;        // the cluster's peer CA; empty: plain peers
  std::string cert_pem;      // this engine's certificate, signed by ca_pem
  std::string key_pem;       // its private key
  int64_t not_after_ms = 0;  // when cert_pem expires, ms since the epoch
  bool auth_only = false;    // with ca_pem: plain torrents, membership proved in-band

  bool tls() const { return !ca_pem.empty() && !auth_only; }
  bool auth() const { return !ca_pem.empty() && auth_only; }
};

struct EngineOptions {
  // Where peers connect: "IP:PORT", port 0 for any free port. IPv6 as
  // "[::1]:0".
  std::string listen = "127.0.0.1:0";
  // Peer sessions, 1..64: each has its own network thread and listens on
  // the port after the previous one's (with port 0, the first is any free
  // port with enough free ones after it). Torrents are spread among them by
  // SessionOf; connections, upload rate and disk workers are per session
  // (the rate and connection limits are divided among them).
  int sessions = 1;
  int disk_threads = 2;             // disk interface worker threads, 1..16
  int send_buffer_kib = 4096;       // per-peer send watermark, KiB, 16..262144
  int socket_buffer_kib = 4096;     // socket send and receive buffers, KiB, 0 = OS default
  int min_announce_interval_s = 5;  // lowest tracker re-announce interval, seconds, 1..3600
  int max_connections = 500;        // peer connections for the whole session
  int eviction_batch_ms = 200;      // evicted chunks are gathered this long before torrents update
  int add_timeout_ms = 30000;       // how long AddFile waits for a torrent to become ready
  // The peer port before and between messages (see peer_deadlines.h):
  int handshake_timeout_s = 10;  // seconds to finish the handshake, 1..300
  int peer_timeout_s = 12;       // seconds of silence before a drop; keep-alives at half, 4..600
  int message_stall_s = 10;      // seconds a begun message may go without progress, 1..300
  uint64_t upload_rate = 0;      // bytes per second to all peers, at most 2 GiB; 0 = no limit
  // Peer admission. False: plain peers from the start. True: the engine
  // listens for TLS and adds no torrent (AddFile waits up to add_timeout_ms)
  // until SetPeerIdentity says how this cluster admits peers.
  bool await_peer_identity = false;

  // OK, or InvalidArgument naming the first bad field and its range.
  Status Validate() const;
};

// Why a connection was refused before it became a peer.
enum class PeerRefusal {
  kNoCertificate,   // the other end presented no certificate
  kBadCertificate,  // one the cluster's CA did not sign, expired, or not for this torrent
  kNotTls,          // plain BitTorrent (or anything but TLS) on a TLS port
  kOtherTls,        // any other TLS failure (an unknown torrent, a broken handshake)
  // Refused at once: its address already held its share of the TLS
  // handshakes under way, or all were taken (the rebuilt libtorrent's
  // patches 03 and 04).
  kTooManyHandshakes,
  kEvicted,  // a handshake under way, closed to make room for another address's
  kCount
};
// "no_certificate", "bad_certificate", "not_tls", "other_tls",
// "too_many_handshakes", "evicted".
const char* PeerRefusalName(PeerRefusal r);

// Why a peer was refused in `auth` mode (peer_auth_plugin.h), and the
// label of each in shoal_agent_peer_auth_refused_total.
enum class PeerAuthRefusal {
  kNoProof,         // no nonce or no shoal_auth in its extension handshake
  kTimeout,         // no valid proof within the handshake timeout
  kBadCertificate,  // not signed by the cluster's CA, expired or not yet valid
  kBadSignature,    // the certificate's key did not sign this connection's challenge
  kMalformed,       // a proof that does not parse
};
constexpr size_t kPeerAuthRefusalCount = 5;
// "no_proof", "timeout", "bad_certificate", "bad_signature", "malformed".
const char* PeerAuthRefusalName(PeerAuthRefusal r);

struct EngineStats {
  uint64_t bytes_up = 0;           // payload bytes sent to peers
  uint64_t bytes_down = 0;         // payload bytes received from peers
  uint64_t hash_failures = 0;      // pieces that failed their hash check
  uint64_t peers_banned = 0;       // peers banned for sending bad data
  uint64_t peers = 0;              // peer connections now
  uint64_t torrents = 0;           // torrents in the engine now
  uint64_t pieces_committed = 0;   // pieces from peers that became chunks
  uint64_t blocks_served = 0;      // 16 KiB blocks read for peers
  uint64_t read_failures = 0;      // reads for peers of chunks that were gone or damaged
  uint64_t write_failures = 0;     // writes the store refused
  uint64_t write_stalls = 0;       // peers paused until the disk caught up
  uint64_t evictions_applied = 0;  // evicted chunks that made a torrent stop advertising a piece
  uint64_t peers_stalled = 0;      // connections dropped for a handshake or message that crawled
  uint64_t pieces_held = 0;    // pieces served only to their next owners for a while (HoldPiece)
  uint64_t requests_kept = 0;  // other peers' requests for them, refused once the hold ended
  uint64_t holds_handed = 0;   // holds ended by a next owner having the piece
  // Connections refused before they became peers, by PeerRefusal.
  std::array<uint64_t, static_cast<size_t>(PeerRefusal::kCount)> refused{};
  bool peer_tls = false;   // peers are admitted by certificate and speak TLS
  bool peer_auth = false;  // peers prove membership, then speak plain BitTorrent
  // Peers refused by the membership proof (peer_auth_plugin.h), by PeerAuthRefusal.
  std::array<uint64_t, kPeerAuthRefusalCount> auth_refused{};
  uint64_t peers_admitted = 0;    // peers that proved membership (auth mode)
  int64_t cert_not_after_ms = 0;  // when the engine's certificate expires; 0: none
  // Per peer session, in session order (see EngineOptions::sessions).
  struct Session {
    uint16_t port = 0;        // its listen port
    uint64_t bytes_up = 0;    // payload bytes sent
    uint64_t bytes_down = 0;  // payload bytes received
    uint64_t peers = 0;       // peer connections now
    uint64_t torrents = 0;    // torrents it carries
  };
  std::vector<Session> sessions;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_ENGINE_OPTIONS_H_
