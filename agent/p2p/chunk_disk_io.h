// ChunkDiskIo: libtorrent's disk I/O, backed by the ChunkStore.
//
// A piece is a chunk. Blocks that peers send are copied, queued to a worker
// thread (piece p to worker p % N, so one piece's jobs stay in order) and
// written into a ChunkWriter for that (torrent, piece), which hashes each
// 16 KiB block as it is written. When libtorrent asks for the piece's hashes
// they come from the writer without reading anything back, and the writer
// commits: the chunk is verified against its ID, fsynced and renamed into
// the store. A commit that fails verification drops the data, and
// libtorrent, seeing the same mismatch, re-requests the piece. A piece whose
// chunk the store already holds is never written again: its writes are
// no-ops and its hashes come from the stored chunk. Reads are served from
// the store; a chunk that is gone fails the read, so no peer is served
// garbage. Every completion is posted to libtorrent's io_context.
//
// Internal to shoal_p2p: only the engine's sources include this header.
// Thread-safety: libtorrent calls the disk_interface methods on its network
// thread; Stats() may be called from any thread.
#ifndef SHOAL_AGENT_P2P_CHUNK_DISK_IO_H_
#define SHOAL_AGENT_P2P_CHUNK_DISK_IO_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "libtorrent/disk_interface.hpp"
#include "libtorrent/io_context.hpp"
#include "libtorrent/settings_pack.hpp"
#include "p2p/torrent_layout.h"
#include "shoal/chunk_store.h"

namespace shoal {

struct DiskIoStats {
  uint64_t blocks_written = 0;    // 16 KiB blocks written into chunk writers
  uint64_t blocks_skipped = 0;    // blocks of pieces the store already held
  uint64_t pieces_committed = 0;  // pieces that became chunks
  uint64_t pieces_rejected = 0;   // pieces whose bytes did not match their chunk ID
  uint64_t blocks_read = 0;       // blocks served to peers
  uint64_t read_failures = 0;     // reads of chunks that were gone or damaged
  uint64_t write_failures = 0;    // writes or commits the store refused
  uint64_t write_stalls = 0;      // times a peer was paused until queued writes drained
};

// Shared between the disk interface, which counts, and the engine, which
// reports; it outlives either.
struct DiskIoCounters {
  std::atomic<uint64_t> blocks_written{0};
  std::atomic<uint64_t> blocks_skipped{0};
  std::atomic<uint64_t> pieces_committed{0};
  std::atomic<uint64_t> pieces_rejected{0};
  std::atomic<uint64_t> blocks_read{0};
  std::atomic<uint64_t> read_failures{0};
  std::atomic<uint64_t> write_failures{0};
  std::atomic<uint64_t> write_stalls{0};

  DiskIoStats Snapshot() const;
};

struct ChunkDiskIoOptions {
  int threads = 2;  // worker threads
};

// Builds the disk interface. `store` and `catalog` must outlive it.
std::unique_ptr<libtorrent::disk_interface> NewChunkDiskIo(
    libtorrent::io_context& ioc, const libtorrent::settings_interface& settings, ChunkStore& store,
    const TorrentCatalog& catalog, const ChunkDiskIoOptions& options,
    std::shared_ptr<DiskIoCounters> counters);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_CHUNK_DISK_IO_H_
