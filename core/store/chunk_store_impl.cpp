#include "store/chunk_store_impl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "shoal/byte_size.h"
#include "shoal/utc_time.h"
#include "store/chunk_verify.h"

namespace shoal {

int64_t ChangeTimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

int64_t PathChangeTimeNs(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? ChangeTimeNs(st) : 0;
}

Result<std::unique_ptr<ChunkStore>> ChunkStore::Open(const StoreOptions& options) {
  SHOAL_RETURN_IF_ERROR(options.Validate());
  auto store = std::make_unique<ChunkStoreImpl>(options);
  SHOAL_RETURN_IF_ERROR(store->Init().WithContext("open chunk cache " + options.dir));
  return std::unique_ptr<ChunkStore>(std::move(store));
}

ChunkStoreImpl::ChunkStoreImpl(const StoreOptions& options)
    : options_(options), layout_(options.dir) {}

ChunkStoreImpl::~ChunkStoreImpl() {
  if (index_ != nullptr) (void)Flush();  // nobody is left to tell
}

// ---- Reads and pins ----

Result<ChunkStoreImpl::OpenChunk> ChunkStoreImpl::PinChunk(const ChunkId& id, VerifyMode mode) {
  OpenChunk c;
  {
    std::lock_guard<std::mutex> l(mu_);
    ChunkEntry* e = table_.Find(id);
    if (e == nullptr) {
      ++counters_.misses;
      return Status::NotFound("chunk " + id.ToHex() + " is not in the cache");
    }
    ++counters_.hits;
    PinLocked(e);
    TouchLocked(e);
    c.size = e->size;
    c.generation = e->generation;
    c.verify = mode == VerifyMode::kAlways || !e->verified;
    c.file_ctime_ns = e->file_ctime_ns;
  }
  c.pin = PinHandle(this, id, c.size, c.generation);
  return c;
}

Status ChunkStoreImpl::OpenChunkFile(const ChunkId& id, OpenChunk* c) {
  std::string path = layout_.ChunkPath(id);
  auto fd = OpenFile(path, O_RDONLY);
  Status s = fd.ok() ? Status::OK() : fd.status();
  int64_t ctime_ns = 0;
  if (s.ok()) {
    // A file changed since it was last known good (written over in place,
    // say) is hashed again: its bytes must never reach a reader, and above
    // all not a peer, whose libtorrent reacts badly to a failed piece (see
    // HashPiece in agent/p2p/chunk_piece_jobs.cpp). One fstat per open.
    struct stat st;
    if (::fstat(fd->get(), &st) == 0) ctime_ns = ChangeTimeNs(st);
    if (ctime_ns == 0 || ctime_ns != c->file_ctime_ns) c->verify = true;
  }
  if (s.ok() && c->verify) s = VerifyChunkFile(fd->get(), path, id, c->size);
  if (!s.ok()) {
    if (s.IsCorruption() || s.IsNotFound()) {
      c->pin.Release();
      DropCorrupt(id, c->generation);
      return Status::Corruption("chunk " + id.ToHex() +
                                " failed verification and was dropped from the cache (" +
                                s.message() + "); fetch it again");
    }
    return s;
  }
  if (c->verify) {
    std::lock_guard<std::mutex> l(mu_);
    ChunkEntry* e = table_.Find(id);
    if (e != nullptr && e->generation == c->generation) {
      e->verified = true;
      e->file_ctime_ns = ctime_ns;
    }
    c->verify = false;
  }
  c->fd = std::move(*fd);
  return Status::OK();
}

Result<ChunkStoreImpl::OpenChunk> ChunkStoreImpl::OpenPinned(const ChunkId& id, VerifyMode mode) {
  auto c = PinChunk(id, mode);
  if (!c.ok()) return c.status();
  SHOAL_RETURN_IF_ERROR(OpenChunkFile(id, &*c));
  return std::move(*c);
}

void ChunkStoreImpl::DropCorrupt(const ChunkId& id, uint64_t generation) {
  std::vector<Removed> removed;
  {
    std::lock_guard<std::mutex> l(mu_);
    ChunkEntry* e = table_.Find(id);
    if (e == nullptr || e->generation != generation) return;
    RemoveLocked(e, &removed);
    ++counters_.corrupt_dropped;
  }
  FinishRemovals(removed);
}

Result<size_t> ChunkStoreImpl::Read(const ChunkId& id, uint64_t offset, uint8_t* buf, size_t len) {
  auto c = OpenPinned(id, VerifyMode::kFirstRead);
  if (!c.ok()) return c.status();
  if (offset > c->size) {
    return Status::InvalidArgument("read at offset " + std::to_string(offset) + " of chunk " +
                                   id.ShortHex() + ", which has " + std::to_string(c->size) +
                                   " bytes");
  }
  size_t want = static_cast<size_t>(std::min<uint64_t>(len, c->size - offset));
  // For a large read, ask for the whole range at once and copy it out in
  // steps, so the disk is kept busy ahead of the copy.
  constexpr size_t kStep = 1u << 20;
  if (want > kStep) {
    ::posix_fadvise(c->fd.get(), static_cast<off_t>(offset), static_cast<off_t>(want),
                    POSIX_FADV_WILLNEED);
  }
  size_t done = 0;
  while (done < want) {
    size_t n = std::min(want - done, kStep);
    auto got = PreadFull(c->fd.get(), buf + done, n, offset + done, layout_.ChunkPath(id));
    if (!got.ok()) return got.status();
    done += *got;
    if (*got < n) break;  // the file is shorter than its record; caught at next open
  }
  bytes_out_.fetch_add(done, std::memory_order_relaxed);
  return done;
}

Result<ChunkSpan> ChunkStoreImpl::OpenSpan(const ChunkId& id, uint64_t offset, uint64_t len) {
  auto c = OpenPinned(id, VerifyMode::kFirstRead);
  if (!c.ok()) return c.status();
  if (offset > c->size) {
    return Status::InvalidArgument("span at offset " + std::to_string(offset) + " of chunk " +
                                   id.ShortHex() + ", which has " + std::to_string(c->size) +
                                   " bytes");
  }
  uint64_t n = std::min<uint64_t>(len, c->size - offset);
  bytes_out_.fetch_add(n, std::memory_order_relaxed);
  return ChunkSpan(c->fd.release(), offset, n, std::move(c->pin));
}

bool ChunkStoreImpl::Contains(const ChunkId& id) {
  std::lock_guard<std::mutex> l(mu_);
  return table_.Find(id) != nullptr;
}

Result<uint64_t> ChunkStoreImpl::Size(const ChunkId& id) {
  std::lock_guard<std::mutex> l(mu_);
  ChunkEntry* e = table_.Find(id);
  if (e == nullptr) return Status::NotFound("chunk " + id.ToHex() + " is not in the cache");
  return e->size;
}

std::vector<ChunkId> ChunkStoreImpl::List() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ChunkId> ids;
  ids.reserve(table_.size());
  table_.ForEach([&](const ChunkEntry& e) { ids.push_back(*e.id); });
  return ids;
}

Result<PinHandle> ChunkStoreImpl::Pin(const ChunkId& id) {
  std::lock_guard<std::mutex> l(mu_);
  ChunkEntry* e = table_.Find(id);
  if (e == nullptr) {
    ++counters_.misses;
    return Status::NotFound("chunk " + id.ToHex() + " is not in the cache; cannot pin it");
  }
  ++counters_.hits;
  PinLocked(e);
  TouchLocked(e);
  return PinHandle(this, id, e->size, e->generation);
}

void ChunkStoreImpl::Unpin(const ChunkId& id, uint64_t generation) {
  std::lock_guard<std::mutex> l(mu_);
  ChunkEntry* e = table_.Find(id);
  // A pin on a chunk that was dropped (and maybe written again) is void.
  if (e == nullptr || e->generation != generation || e->pins == 0) return;
  table_.Unpin(e);
  if (e->pins == 0) {
    --pinned_chunks_;
    pinned_bytes_ -= e->size;
  }
}

void ChunkStoreImpl::PinLocked(ChunkEntry* e) {
  if (e->pins == 0) {
    ++pinned_chunks_;
    pinned_bytes_ += e->size;
  }
  table_.Pin(e);
}

Status ChunkStoreImpl::SetOwned(const ChunkId& id, bool owned) {
  std::lock_guard<std::mutex> l(mu_);
  ChunkEntry* e = table_.Find(id);
  if (e == nullptr) return Status::NotFound("chunk " + id.ToHex() + " is not in the cache");
  if (e->owned == owned) return Status::OK();
  table_.SetOwned(e, owned);
  owned_chunks_ = owned ? owned_chunks_ + 1 : owned_chunks_ - 1;
  if (!index_->Put(id, RecordOf(*e)).ok()) ++counters_.index_errors;
  return Status::OK();
}

Status ChunkStoreImpl::Evict(const ChunkId& id) {
  std::vector<Removed> removed;
  {
    std::lock_guard<std::mutex> l(mu_);
    ChunkEntry* e = table_.Find(id);
    if (e == nullptr) return Status::NotFound("chunk " + id.ToHex() + " is not in the cache");
    if (e->pins > 0) {
      return Status::Unavailable("chunk " + id.ShortHex() + " is pinned by " +
                                 std::to_string(e->pins) + " readers; evict it after they finish");
    }
    RemoveLocked(e, &removed);
    ++counters_.evictions;
  }
  FinishRemovals(removed);
  return Status::OK();
}

Status ChunkStoreImpl::Verify(const ChunkId& id) {
  auto c = OpenPinned(id, VerifyMode::kAlways);
  return c.ok() ? Status::OK() : c.status();
}

StoreStats ChunkStoreImpl::Stats() {
  std::lock_guard<std::mutex> l(mu_);
  StoreStats s = counters_;
  s.capacity_bytes = options_.capacity_bytes;
  s.used_bytes = used_bytes_;
  s.reserved_bytes = reserved_bytes_;
  s.chunks = table_.size();
  s.pinned_chunks = pinned_chunks_;
  s.pinned_bytes = pinned_bytes_;
  s.owned_chunks = owned_chunks_;
  s.bytes_out = bytes_out_.load(std::memory_order_relaxed);
  return s;
}

// ---- Last-access batching ----

void ChunkStoreImpl::TouchLocked(ChunkEntry* e) {
  int64_t now = NowMs();
  table_.Touch(e, now);
  if (!e->access_dirty) {
    e->access_dirty = true;
    dirty_access_.push_back(*e->id);
  }
  if (dirty_access_.size() >= options_.access_flush_batch ||
      now - last_access_flush_ms_ >= static_cast<int64_t>(options_.access_flush_interval_ms)) {
    (void)FlushAccessLocked();  // counted in index_errors; access times are hints
  }
}

Status ChunkStoreImpl::FlushAccessLocked() {
  last_access_flush_ms_ = NowMs();
  std::vector<std::pair<ChunkId, IndexRecord>> batch;
  batch.reserve(dirty_access_.size());
  for (const ChunkId& id : dirty_access_) {
    ChunkEntry* e = table_.Find(id);
    if (e == nullptr || !e->access_dirty) continue;  // removed since
    e->access_dirty = false;
    batch.emplace_back(id, RecordOf(*e));
  }
  dirty_access_.clear();
  Status s = index_->PutMany(batch);
  if (!s.ok()) ++counters_.index_errors;
  return s;
}

Status ChunkStoreImpl::Flush() {
  std::lock_guard<std::mutex> l(mu_);
  return FlushAccessLocked();
}

IndexRecord ChunkStoreImpl::RecordOf(const ChunkEntry& e) const {
  IndexRecord r;
  r.size = e.size;
  r.last_access_ms = e.last_access_ms;
  r.owned = e.owned;
  r.state = ChunkState::kReady;
  return r;
}

// ---- Budget and eviction ----

Status ChunkStoreImpl::ReserveLocked(uint64_t bytes, std::vector<Removed>* removed) {
  const uint64_t cap = options_.capacity_bytes;
  if (bytes > cap) {
    return Status::NoSpace("cache full: a " + FormatBytes(bytes) + " chunk is larger than the " +
                           FormatBytes(cap) + " cache; raise --cache-size");
  }
  // Evicting everything unpinned would still not make room: evict nothing.
  if (pinned_bytes_ + reserved_bytes_ + bytes > cap) {
    return Status::NoSpace(CacheFullMessage(bytes));
  }
  TrimLocked(bytes, removed);
  if (used_bytes_ + reserved_bytes_ + bytes > cap) return Status::NoSpace(CacheFullMessage(bytes));
  reserved_bytes_ += bytes;
  ++writes_in_flight_;
  return Status::OK();
}

void ChunkStoreImpl::TrimLocked(uint64_t incoming, std::vector<Removed>* removed) {
  const double cap = static_cast<double>(options_.capacity_bytes);
  auto total = [&] { return static_cast<double>(used_bytes_ + reserved_bytes_ + incoming); };
  if (total() <= cap * options_.high_watermark) return;
  while (total() > cap * options_.low_watermark) {
    ChunkEntry* victim = table_.Victim();
    if (victim == nullptr) break;
    RemoveLocked(victim, removed);
    ++counters_.evictions;
  }
}

uint64_t ChunkStoreImpl::EvictForDiskLocked(uint64_t bytes, std::vector<Removed>* removed) {
  uint64_t freed = 0;
  while (freed < bytes) {
    ChunkEntry* victim = table_.Victim();
    if (victim == nullptr) break;
    freed += victim->size;
    RemoveLocked(victim, removed);
    ++counters_.evictions;
  }
  return freed;
}

void ChunkStoreImpl::RemoveLocked(ChunkEntry* e, std::vector<Removed>* removed) {
  Removed r;
  r.id = *e->id;
  // Renaming away under the lock keeps a concurrent commit of the same ID
  // from having its new file deleted; the slow unlink happens later.
  std::string path = layout_.ChunkPath(r.id);
  r.path = layout_.NewTempPath(r.id, "evict");
  if (::rename(path.c_str(), r.path.c_str()) != 0) {
    if (errno != ENOENT) ::unlink(path.c_str());
    r.path.clear();
  }
  if (!index_->Delete(r.id).ok()) ++counters_.index_errors;
  used_bytes_ -= e->size;
  if (e->pins > 0) {
    --pinned_chunks_;
    pinned_bytes_ -= e->size;
  }
  if (e->owned) --owned_chunks_;
  table_.Erase(e);
  removed->push_back(std::move(r));
}

void ChunkStoreImpl::FinishRemovals(const std::vector<Removed>& removed) {
  for (const Removed& r : removed) {
    if (!r.path.empty()) ::unlink(r.path.c_str());
    if (options_.on_evict) options_.on_evict(r.id);
  }
}

std::string ChunkStoreImpl::CacheFullMessage(uint64_t bytes) const {
  return "cache full: no room for a " + FormatBytes(bytes) + " chunk; " +
         FormatBytes(pinned_bytes_) + " is pinned (" + std::to_string(pinned_chunks_) +
         " chunks) and " + FormatBytes(reserved_bytes_) + " is being written (" +
         std::to_string(writes_in_flight_) + " writes) of " + FormatBytes(options_.capacity_bytes) +
         " capacity; raise --cache-size or wait for pulls to finish";
}

// REQUIRES: the write asking holds a reservation, so is among writes_in_flight_.
std::string ChunkStoreImpl::DiskFullMessage(uint64_t bytes) const {
  return "disk full: the filesystem holding " + options_.dir + " has no room for a " +
         FormatBytes(bytes) + " chunk and nothing in the cache can be evicted (" +
         FormatBytes(pinned_bytes_) + " pinned in " + std::to_string(pinned_chunks_) + " chunks, " +
         std::to_string(writes_in_flight_ - 1) +
         " other writes in flight); free space on that filesystem or lower --cache-size to fit it";
}

}  // namespace shoal
