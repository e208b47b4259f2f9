// ChunkStoreImpl: the ChunkStore behind ChunkStore::Open().
//
// Its code is split by idea: chunk_store_impl.cpp (reads, pins, budget and
// eviction), chunk_store_write.cpp (puts and commits), store_reconcile.cpp
// (open), materialize.cpp (assembling files).
//
// Locking: one mutex guards the table, the byte counts and the counters.
// It is held for in-memory work, renames and unsynced index writes, never
// for data I/O, hashing, fsync or unlinking a file's blocks.
//
// Thread-safety: as ChunkStore.
#ifndef SHOAL_CORE_CHUNK_STORE_IMPL_H_
#define SHOAL_CORE_CHUNK_STORE_IMPL_H_

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "shoal/chunk_store.h"
#include "shoal/posix_file.h"
#include "store/chunk_index.h"
#include "store/chunk_table.h"
#include "store/store_layout.h"

namespace shoal {

class ChunkStoreImpl final : public ChunkStore, public PinHandle::Owner {
 public:
  explicit ChunkStoreImpl(const StoreOptions& options);
  ~ChunkStoreImpl() override;

  // Creates the folders, opens the index and reconciles it with the files.
  // Called once, before the store is shared. (store_reconcile.cpp)
  Status Init();

  Status Put(const ChunkId& id, const uint8_t* data, size_t len,
             const ChunkWriteOptions& wo) override;
  Status PutHashed(const ChunkId& id, const uint8_t* data, size_t len,
                   const std::vector<Digest>& leaves, const ChunkWriteOptions& wo) override;
  Result<std::unique_ptr<ChunkWriter>> BeginWrite(const ChunkId& id, uint64_t size,
                                                  const ChunkWriteOptions& wo) override;
  Result<size_t> Read(const ChunkId& id, uint64_t offset, uint8_t* buf, size_t len) override;
  Result<ChunkSpan> OpenSpan(const ChunkId& id, uint64_t offset, uint64_t len) override;
  bool Contains(const ChunkId& id) override;
  Result<uint64_t> Size(const ChunkId& id) override;
  std::vector<ChunkId> List() override;
  Result<PinHandle> Pin(const ChunkId& id) override;
  Status SetOwned(const ChunkId& id, bool owned) override;
  Status Evict(const ChunkId& id) override;
  Status Verify(const ChunkId& id) override;
  Status Materialize(const std::vector<ChunkId>& chunks, uint64_t file_size, uint32_t piece_size,
                     const std::string& target_path, uint32_t mode) override;
  StoreStats Stats() override;
  StoreSpace Space() override;
  Status Flush() override;

  void Unpin(const ChunkId& id, uint64_t generation) override;

  // For ChunkWriterImpl. CommitWrite renames the verified, synced temporary
  // file into place and indexes it, or deletes it if the chunk arrived
  // meanwhile; either way the write's reservation is released.
  Status CommitWrite(const ChunkId& id, uint64_t size, bool owned, const std::string& tmp_path);
  // Releases the reservation of a write that will not commit.
  void AbandonWrite(uint64_t size);

 private:
  // A chunk taken out of the table whose file still has to be deleted.
  struct Removed {
    ChunkId id;
    std::string path;  // empty if nothing is left to delete
  };
  // A chunk pinned for reading, and once opened, its file.
  struct OpenChunk {
    PinHandle pin;
    ScopedFd fd;
    uint64_t size = 0;
    uint64_t generation = 0;
    bool verify = false;        // hash the file when opening it
    int64_t file_ctime_ns = 0;  // ChunkEntry::file_ctime_ns when pinned
  };
  enum class VerifyMode { kFirstRead, kAlways };
  struct Reconcile;  // Init's steps (store_reconcile.cpp)

  // Pins the chunk; counts a hit or a miss. The file is not opened yet.
  Result<OpenChunk> PinChunk(const ChunkId& id, VerifyMode mode);
  // Opens the pinned chunk's file, hashing it first if c->verify is set
  // (it was not checked since open, or `mode` asked), and dropping the chunk
  // with Corruption if it is bad.
  Status OpenChunkFile(const ChunkId& id, OpenChunk* c);
  // PinChunk, then OpenChunkFile.
  Result<OpenChunk> OpenPinned(const ChunkId& id, VerifyMode mode);
  // Drops a chunk that failed verification, if it is still the same one.
  void DropCorrupt(const ChunkId& id, uint64_t generation);

  // REQUIRES: mu_ held.
  // Reserves `bytes` of budget for a write, evicting down to the low
  // watermark first if the high one would be passed.
  Status ReserveLocked(uint64_t bytes, std::vector<Removed>* removed);
  // Evicts LRU chunks until `bytes` are freed on disk. Returns the bytes.
  uint64_t EvictForDiskLocked(uint64_t bytes, std::vector<Removed>* removed);
  // Evicts down to the low watermark if above the high one.
  void TrimLocked(uint64_t incoming, std::vector<Removed>* removed);
  // Takes `e` out of the table and index; its file moves to tmp/.
  void RemoveLocked(ChunkEntry* e, std::vector<Removed>* removed);
  void PinLocked(ChunkEntry* e);
  void TouchLocked(ChunkEntry* e);
  Status FlushAccessLocked();
  IndexRecord RecordOf(const ChunkEntry& e) const;
  std::string CacheFullMessage(uint64_t bytes) const;
  std::string DiskFullMessage(uint64_t bytes) const;
  // A write of `bytes` was refused with `why`; the refusal state starts now
  // unless it is already on.
  void NoteRefusalLocked(uint64_t bytes, const std::string& why);

  // Deletes removed files and tells the listener. REQUIRES: mu_ not held.
  void FinishRemovals(const std::vector<Removed>& removed);

  // Constant after construction (index_ after Init).
  const StoreOptions options_;
  const StoreLayout layout_;
  std::unique_ptr<ChunkIndex> index_;

  std::atomic<uint64_t> bytes_out_{0};

  std::mutex mu_;
  // Protected by mu_.
  ChunkTable table_;
  uint64_t used_bytes_ = 0;
  uint64_t reserved_bytes_ = 0;
  uint64_t writes_in_flight_ = 0;
  uint64_t pinned_chunks_ = 0;
  uint64_t pinned_bytes_ = 0;
  uint64_t owned_chunks_ = 0;
  StoreStats counters_;  // only the counter fields are used
  // Whether writes are being refused NoSpace: set by a refused write,
  // cleared by the next write that begins (read without mu_ on that path).
  // While set: since the first refusal, and the last refusal's size and
  // message.
  std::atomic<bool> refusing_{false};
  std::chrono::steady_clock::time_point refusing_since_;
  uint64_t refused_bytes_ = 0;
  std::string refusal_;
  std::vector<ChunkId> dirty_access_;  // entries whose access_dirty is set
  int64_t last_access_flush_ms_ = 0;
};

// Preallocated beyond a chunk when its write begins and given back just
// before commit, so the index update that follows finds room on a nearly
// full disk.
constexpr uint64_t kIndexSlack = 64u << 10;

// The file's change time in nanoseconds (see ChunkEntry::file_ctime_ns).
int64_t ChangeTimeNs(const struct stat& st);
// ChangeTimeNs of the file at `path`, or 0 if it cannot be stat'ed.
int64_t PathChangeTimeNs(const std::string& path);

}  // namespace shoal

#endif  // SHOAL_CORE_CHUNK_STORE_IMPL_H_
