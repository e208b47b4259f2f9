// EngineOptions and EngineStats: how a TorrentEngine is set up, and what it
// reports for /metrics.
#ifndef SHOAL_AGENT_P2P_ENGINE_OPTIONS_H_
#define SHOAL_AGENT_P2P_ENGINE_OPTIONS_H_

#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal {

struct EngineOptions {
  // Where peers connect: "IP:PORT", port 0 for any free port. IPv6 as
  // "[::1]:0".
  std::string listen = "127.0.0.1:0";
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

  // OK, or InvalidArgument naming the first bad field and its range.
  Status Validate() const;
};

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
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_ENGINE_OPTIONS_H_
