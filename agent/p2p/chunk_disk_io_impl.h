// ChunkDiskIoImpl: the class behind NewChunkDiskIo (see chunk_disk_io.h).
// chunk_disk_io.cpp holds libtorrent's entry points, which run on the network
// thread and queue work; chunk_piece_jobs.cpp and chunk_read_jobs.cpp hold
// the work, which runs on the workers.
#ifndef SHOAL_AGENT_P2P_CHUNK_DISK_IO_IMPL_H_
#define SHOAL_AGENT_P2P_CHUNK_DISK_IO_IMPL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "libtorrent/disk_observer.hpp"
#include "libtorrent/error_code.hpp"
#include "libtorrent/sha1_hash.hpp"
#include "p2p/block_pool.h"
#include "p2p/chunk_disk_io.h"
#include "p2p/disk_job_queue.h"

namespace shoal {

namespace lt = libtorrent;

// One piece being written. Touched only by the worker that owns the piece.
struct PieceState {
  std::unique_ptr<ChunkWriter> writer;  // set while the piece is being written
  PinHandle pin;                        // set when the store already had the chunk
};

// One torrent's storage. Jobs hold their own reference, so the storage lives
// until its last job ends even after libtorrent removes the torrent.
struct ChunkStorage {
  std::shared_ptr<const TorrentLayout> layout;  // null if the engine registered none
  // pieces[w] belongs to worker w: no lock needed.
  std::vector<std::unordered_map<uint64_t, PieceState>> pieces;
};

// Open chunk files for serving reads, per worker; each pins its chunk.
struct SpanCache {
  struct Entry {
    ChunkSpan span;
    std::chrono::steady_clock::time_point last_use;
  };
  std::vector<Entry> entries;  // at most kSpanCacheSize, most recent last
};

class ChunkDiskIoImpl final : public lt::disk_interface, public lt::buffer_allocator_interface {
 public:
  ChunkDiskIoImpl(lt::io_context& ioc, const lt::settings_interface& settings, ChunkStore& store,
                  const TorrentCatalog& catalog, const ChunkDiskIoOptions& options,
                  std::shared_ptr<DiskIoCounters> counters);
  ~ChunkDiskIoImpl() override;

  lt::storage_holder new_torrent(lt::storage_params const& p,
                                 std::shared_ptr<void> const& torrent) override;
  void remove_torrent(lt::storage_index_t) override;
  void async_read(lt::storage_index_t storage, lt::peer_request const& r,
                  std::function<void(lt::disk_buffer_holder, lt::storage_error const&)> handler,
                  lt::disk_job_flags_t flags) override;
  bool async_write(lt::storage_index_t storage, lt::peer_request const& r, char const* buf,
                   std::shared_ptr<lt::disk_observer> o,
                   std::function<void(lt::storage_error const&)> handler,
                   lt::disk_job_flags_t flags) override;
  void async_hash(
      lt::storage_index_t storage, lt::piece_index_t piece, lt::span<lt::sha256_hash> v2,
      lt::disk_job_flags_t flags,
      std::function<void(lt::piece_index_t, lt::sha1_hash const&, lt::storage_error const&)>
          handler) override;
  void async_hash2(
      lt::storage_index_t storage, lt::piece_index_t piece, int offset, lt::disk_job_flags_t flags,
      std::function<void(lt::piece_index_t, lt::sha256_hash const&, lt::storage_error const&)>
          handler) override;
  void async_move_storage(
      lt::storage_index_t storage, std::string p, lt::move_flags_t flags,
      std::function<void(lt::status_t, std::string const&, lt::storage_error const&)> handler)
      override;
  void async_release_files(lt::storage_index_t storage, std::function<void()> handler) override;
  void async_check_files(
      lt::storage_index_t storage, lt::add_torrent_params const* resume_data,
      lt::aux::vector<std::string, lt::file_index_t> links,
      std::function<void(lt::status_t, lt::storage_error const&)> handler) override;
  void async_stop_torrent(lt::storage_index_t storage, std::function<void()> handler) override;
  void async_rename_file(
      lt::storage_index_t storage, lt::file_index_t index, std::string name,
      std::function<void(std::string const&, lt::file_index_t, lt::storage_error const&)> handler)
      override;
  void async_delete_files(lt::storage_index_t storage, lt::remove_flags_t options,
                          std::function<void(lt::storage_error const&)> handler) override;
  void async_set_file_priority(
      lt::storage_index_t storage, lt::aux::vector<lt::download_priority_t, lt::file_index_t> prio,
      std::function<void(lt::storage_error const&,
                         lt::aux::vector<lt::download_priority_t, lt::file_index_t>)>
          handler) override;
  void async_clear_piece(lt::storage_index_t storage, lt::piece_index_t index,
                         std::function<void(lt::piece_index_t)> handler) override;
  void update_stats_counters(lt::counters& c) const override;
  std::vector<lt::open_file_state> get_status(lt::storage_index_t) const override;
  void abort(bool wait) override;
  void submit_jobs() override;
  void settings_updated() override;
  void free_disk_buffer(char* b) override;

  // Worker-side work; see chunk_piece_jobs.cpp and chunk_read_jobs.cpp.
  lt::storage_error WritePiece(ChunkStorage& st, int worker, uint64_t piece, int offset,
                               const char* data, int len);
  lt::storage_error HashPiece(ChunkStorage& st, int worker, uint64_t piece,
                              lt::span<lt::sha256_hash> v2);
  lt::storage_error HashBlock(ChunkStorage& st, int worker, uint64_t piece, int offset,
                              lt::sha256_hash* out);
  void ClearPiece(ChunkStorage& st, int worker, uint64_t piece);
  lt::storage_error ReadBlock(ChunkStorage& st, int worker, uint64_t piece, int offset, char* out,
                              int len);
  void DropIdleSpans(int worker);

  static lt::storage_error ToStorageError(const Status& s, lt::operation_t op);

 private:
  std::shared_ptr<ChunkStorage> Get(lt::storage_index_t idx) const;
  int WorkerOf(lt::piece_index_t piece) const;
  // Called on a worker when a queued write is done: lowers the queued byte
  // count and wakes stalled peers once it is low again.
  void WriteDone(int len);
  // Hashes blocks of a stored chunk; false if the chunk is gone or damaged.
  bool HashStoredBlocks(const ChunkId& id, uint64_t first_block, uint64_t count,
                        uint64_t chunk_bytes, lt::sha256_hash* out);

  // Constant after construction.
  lt::io_context& ioc_;
  const lt::settings_interface& settings_;
  ChunkStore& store_;
  const TorrentCatalog& catalog_;
  const std::shared_ptr<DiskIoCounters> counters_;

  // Network thread only.
  std::vector<std::shared_ptr<ChunkStorage>> storages_;
  std::vector<int> free_slots_;

  // Backpressure: bytes of writes queued but not yet done, and the peers
  // waiting for that to fall.
  std::mutex write_mu_;
  int64_t queued_write_bytes_ = 0;                           // protected by write_mu_
  int64_t write_limit_ = 16 << 20;                           // protected by write_mu_
  std::vector<std::shared_ptr<lt::disk_observer>> stalled_;  // protected by write_mu_

  std::vector<SpanCache> spans_;  // one per worker, used only by that worker
  BlockPool blocks_{1024};        // copies of written blocks; up to 16 MiB idle

  DiskJobQueue jobs_;  // last: its workers stop before the rest is destroyed
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_CHUNK_DISK_IO_IMPL_H_
