#include "cli/chunk_uploader.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "shoal/chunk_hash.h"
#include "shoal/posix_file.h"

namespace shoal {

std::unordered_map<ChunkId, ChunkSource> LocateChunks(const Manifest& m, const std::string& dir) {
  std::unordered_map<ChunkId, ChunkSource> out;
  for (const FileEntry& f : m.files) {
    std::vector<ChunkId> ids = f.ChunkIds();
    for (size_t i = 0; i < ids.size(); ++i) {
      uint64_t off = uint64_t{i} * m.piece_size;
      out.emplace(ids[i], ChunkSource{dir + "/" + f.path, off,
                                      std::min<uint64_t>(m.piece_size, f.size - off)});
    }
  }
  return out;
}

namespace {

// Reads a chunk again and checks it is still the chunk that was hashed.
Status ReadChunkAgain(const ChunkId& id, const ChunkSource& src, std::vector<uint8_t>* buf) {
  Result<ScopedFd> fd = OpenFile(src.path, O_RDONLY);
  if (!fd.ok()) return fd.status();
  buf->resize(src.length);
  Result<size_t> got = PreadFull(fd->get(), buf->data(), src.length, src.offset, src.path);
  if (!got.ok()) return got.status();
  if (*got < src.length) {
    return Status::IOError(src.path + " shrank since it was hashed; publish again");
  }
  if (!ChunkIdMatches(id, HashBlocks(buf->data(), buf->size()))) {
    return Status::Corruption(src.path + " changed since it was hashed; publish again");
  }
  return Status::OK();
}

uint64_t PutRetries(const Origin& origin) { return origin.counters().put.retries; }

// The nice value of upload workers that yield the CPU.
constexpr int kYieldingNice = 10;

}  // namespace

ChunkUploader::ChunkUploader(Origin& origin, int parallelism, uint64_t memory_limit,
                             WhenFull when_full)
    : origin_(origin),
      memory_limit_(memory_limit),
      when_full_(when_full),
      yield_cpu_(when_full == WhenFull::kReadAgain),
      window_(parallelism) {
  const int n = std::max(1, parallelism);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { Work(); });
}

ChunkUploader::~ChunkUploader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  room_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ChunkUploader::Offer(HashedPiece& piece) {
  std::unique_lock<std::mutex> lock(mu_);
  auto [it, fresh] =
      entries_.try_emplace(piece.id, Entry{{*piece.path, piece.offset, piece.bytes->size()}, {}});
  if (!fresh) return;  // the same bytes elsewhere in the checkpoint
  const size_t size = piece.bytes->size();
  auto fits = [this, size] { return kept_ == 0 || kept_ + size <= memory_limit_; };
  if (when_full_ == WhenFull::kWait) {
    room_cv_.wait(lock, [this, &fits] { return fits() || stopping_ || !error_.ok(); });
  }
  // Offered only now: no upload may start on it while its bytes are on the way.
  offered_.push_back(piece.id);
  done_cv_.notify_all();  // the planning thread takes it without waiting out its tick
  if (fits()) {
    kept_ += size;
    it->second.bytes.swap(*piece.bytes);
    // The hasher reads its next piece into a buffer an upload is done with,
    // not a fresh one the kernel must fault in and zero.
    if (!spare_.empty()) {
      piece.bytes->swap(spare_.back());
      spare_.pop_back();
    }
  }
}

void ChunkUploader::Recycle(std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return;
  kept_ -= bytes.size();
  // Spares and kept bytes together stay within the limit (plus one buffer
  // per hashing thread), so keeping every spare costs no more memory.
  spare_.push_back(std::move(bytes));
  std::vector<uint8_t>().swap(bytes);
  room_cv_.notify_all();
}

std::vector<ChunkId> ChunkUploader::TakeOffered() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(offered_, {});
}

void ChunkUploader::AddSources(const std::unordered_map<ChunkId, ChunkSource>& sources) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, src] : sources) entries_.try_emplace(id, Entry{src, {}});
}

void ChunkUploader::Upload(const std::vector<ChunkId>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ChunkId& id : ids) {
    if (entries_.count(id) == 0) {
      Fail(Status::InvalidArgument("the tracker asked for chunk " + id.ShortHex() +
                                   ", which this checkpoint does not have"));
      continue;
    }
    queue_.push_back(id);
    queued_ += entries_[id].source.length;
  }
  work_cv_.notify_all();
}

void ChunkUploader::Release(const std::vector<ChunkId>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ChunkId& id : ids) {
    auto it = entries_.find(id);
    if (it != entries_.end()) Recycle(it->second.bytes);
  }
}

std::vector<ChunkId> ChunkUploader::TakeStored(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait_for(lock, wait,
                    [this] { return !stored_.empty() || !offered_.empty() || !error_.ok(); });
  return std::exchange(stored_, {});
}

bool ChunkUploader::Busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_.ok() && (!queue_.empty() || in_flight_ > 0);
}

Status ChunkUploader::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

uint64_t ChunkUploader::kept_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_;
}

uint64_t ChunkUploader::queued_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

// One worker: takes the next queued chunk whenever the window has room.
void ChunkUploader::Work() {
  if (yield_cpu_) {
    // Hashing, and the agent's seed, decide when the version is pullable;
    // uploads only when it is durable. They get the CPU first.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kYieldingNice);
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] {
      return stopping_ || (error_.ok() && !queue_.empty() && in_flight_ < window_.size());
    });
    if (stopping_) return;
    const ChunkId id = queue_.front();
    queue_.pop_front();
    ++in_flight_;
    // Entries are never erased while workers run, so `e` stays valid
    // unlocked; only this worker touches a queued chunk's bytes.
    Entry& e = entries_.at(id);
    const uint64_t retries_before = PutRetries(origin_);
    lock.unlock();
    Status s = Put(id, e);
    const uint64_t retries_after = PutRetries(origin_);
    lock.lock();
    // One retry narrows the window once, however many PUTs overlapped it.
    const bool throttled = retries_after != retries_before && retries_after > retries_seen_;
    retries_seen_ = std::max(retries_seen_, retries_after);
    Finish(id, s, throttled);
  }
}

Status ChunkUploader::Put(const ChunkId& id, Entry& e) {
  std::vector<uint8_t> reread;
  const std::vector<uint8_t>* bytes = &e.bytes;
  if (e.bytes.empty() && e.source.length > 0) {
    SHOAL_RETURN_IF_ERROR(ReadChunkAgain(id, e.source, &reread));
    stats_.reread_bytes += reread.size();
    bytes = &reread;
  }
  bool uploaded = false;
  SHOAL_RETURN_IF_ERROR(PutChunkIfAbsent(origin_, id, bytes->data(), bytes->size(), &uploaded));
  (uploaded ? stats_.uploaded_chunks : stats_.skipped_chunks)++;
  if (uploaded) stats_.uploaded_bytes += bytes->size();
  stats_.done_bytes += bytes->size();
  return Status::OK();
}

// Records the end of one upload. REQUIRES: mu_ held.
void ChunkUploader::Finish(const ChunkId& id, const Status& s, bool throttled) {
  --in_flight_;
  Entry& e = entries_.at(id);
  queued_ -= e.source.length;
  Recycle(e.bytes);
  if (throttled) {
    stats_.throttled++;
    window_.OnThrottled();
  } else if (s.ok()) {
    window_.OnClean();
  }
  if (!s.ok()) {
    Fail(s);
  } else {
    stored_.push_back(id);
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
}

void ChunkUploader::Abort(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  Fail(why);
}

void ChunkUploader::Fail(const Status& s) {
  if (error_.ok()) error_ = s;
  // A hasher waiting for room, and the planning thread, wait no more.
  room_cv_.notify_all();
  done_cv_.notify_all();
}

}  // namespace shoal
