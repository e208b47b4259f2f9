#include "read/read_fetcher.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "fetch/chunk_fetcher.h"
#include "p2p/torrent_engine.h"
#include "shoal/log.h"

namespace shoal {
namespace {

// The torrent a file moves in: its own, or its version's bundle.
std::string TorrentKey(const ReadFile& f) {
  if (f.bundle) return "bundle:" + f.version.ToHex() + ":" + std::to_string(f.bundle_index);
  return f.file.pieces_root.ToHex() + ":" + std::to_string(f.piece_size);
}

MissingChunkOptions PolicyOptions(const ReadFetcherOptions& o) {
  MissingChunkOptions m;
  m.read_origin_wait_ms = o.origin_wait_ms;
  m.read_tracker_wait_ms = o.tracker_wait_ms;
  m.origin_parallelism = o.origin_parallelism;
  return m;
}

// The file's content in that torrent: a bundle holds many.
std::string ContentKey(const ReadFile& f) {
  return f.bundle ? TorrentKey(f) + ":" + f.file.pieces_root.ToHex() : TorrentKey(f);
}

}  // namespace

uint64_t ReadFile::PieceBytes(uint64_t piece) const {
  return std::min<uint64_t>(piece_size, file.size - piece * piece_size);
}

ReadFetcher::ReadFetcher(const ReadFetcherOptions& options, ChunkStore& store,
                         TorrentEngine& engine, ChunkFetcher* origin,
                         std::function<std::string()> announce_url)
    : options_(options),
      policy_(PolicyOptions(options)),
      store_(store),
      engine_(engine),
      origin_(origin),
      announce_url_(std::move(announce_url)) {
  loop_ = std::thread([this] { Loop(); });
  for (int i = 0; i < std::max(1, options_.origin_parallelism); ++i) {
    fetch_threads_.emplace_back([this] { FetchLoop(); });
  }
}

ReadFetcher::~ReadFetcher() { Stop(); }

void ReadFetcher::Stop() {
  std::vector<Waiter> left;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_ && !loop_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  fetch_cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  for (std::thread& t : fetch_threads_) t.join();
  fetch_threads_.clear();
  {
    std::lock_guard<std::mutex> l(mu_);
    left.swap(waiters_);
  }
  for (Waiter& w : left) w.ready(Status::Unavailable("the agent is stopping"));
}

void ReadFetcher::Await(std::shared_ptr<const ReadFile> file, uint64_t piece, uint64_t last_piece,
                        std::function<void(Status)> ready, std::chrono::milliseconds give_up) {
  if (store_.Contains(file->chunks[piece])) return ready(Status::OK());
  {
    std::unique_lock<std::mutex> l(mu_);
    if (stopping_) {
      l.unlock();
      return ready(Status::Unavailable("the agent is stopping"));
    }
    uint64_t last =
        std::min<uint64_t>(last_piece, piece + uint64_t(std::max(0, options_.read_ahead_pieces)));
    if (give_up <= std::chrono::milliseconds::zero())
      give_up = std::chrono::milliseconds(options_.give_up_ms);
    waiters_.push_back(
        Waiter{std::move(file), piece, last, std::move(ready), Clock::now(), give_up});
  }
  cv_.notify_all();
}

void ReadFetcher::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    if (waiters_.empty() && fetched_.empty()) {
      cv_.wait(l);
      continue;
    }
    auto fetched = std::exchange(fetched_, {});
    l.unlock();
    auto wanted = Sweep();  // readers first: the handovers below read whole chunks
    // Chunks from the origin join their torrents, so this agent seeds them.
    for (const auto& [file, piece] : fetched) {
      auto it = torrents_.find(TorrentKey(*file));
      if (it == torrents_.end() || !it->second.add_error.ok()) continue;
      Status s = engine_.ChunkArrived(it->second.id, file->TorrentPiece(piece));
      if (!s.ok()) Log(LogLevel::kWarn, "read.chunk_handover_failed", {{"error", s.ToString()}});
    }
    for (const auto& [key, want] : wanted) Pursue(want);
    l.lock();
    if (!stopping_ && fetched_.empty())
      cv_.wait_for(l, std::chrono::milliseconds(options_.poll_ms));
  }
}

std::map<std::string, ReadFetcher::Wanted> ReadFetcher::Sweep() {
  std::map<std::string, Wanted> wanted;
  std::vector<std::pair<Waiter, Status>> finished;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto failures = std::exchange(failed_, {});
    const Clock::time_point now = Clock::now();
    std::vector<Waiter> keep;
    for (Waiter& w : waiters_) {
      const ChunkId& chunk = w.file->chunks[w.piece];
      auto failed = std::find_if(failures.begin(), failures.end(),
                                 [&](const auto& f) { return f.first == chunk; });
      if (store_.Contains(chunk)) {
        finished.emplace_back(std::move(w), Status::OK());
      } else if (failed != failures.end()) {
        finished.emplace_back(std::move(w), failed->second);
      } else if (now - w.since > w.give_up) {
        char waited[32];
        std::snprintf(waited, sizeof(waited), "%.1f s", double(w.give_up.count()) / 1000);
        finished.emplace_back(std::move(w),
                              Status::Unavailable("no peer or origin delivered chunk " +
                                                  chunk.ShortHex() + " in " + waited));
      } else {
        Wanted& want = wanted[ContentKey(*w.file)];
        want.file = w.file;
        want.heads.insert(w.piece);
        for (uint64_t p = w.piece; p <= w.last_wanted; ++p) want.pieces.insert(p);
        keep.push_back(std::move(w));
      }
    }
    waiters_ = std::move(keep);
  }
  for (auto& [w, s] : finished) w.ready(s);
  return wanted;
}

ReadFetcher::Torrent& ReadFetcher::TorrentOf(const ReadFile& file, Clock::time_point now) {
  auto [it, added] = torrents_.try_emplace(TorrentKey(file));
  Torrent& t = it->second;
  // A failed add (the engine busy re-adding after an eviction, say) is
  // tried again a second later; meanwhile the origin serves.
  if (!added && (t.add_error.ok() || now - t.added < std::chrono::seconds(1))) return t;
  t.add_error = Status::OK();
  t.added = now;
  const std::string announce = announce_url_ ? announce_url_() : "";
  auto id = [&]() -> Result<FileTorrentId> {
    if (!file.bundle) {
      return engine_.AddFile(file.file, file.piece_size, announce,
                             TorrentEngine::AddMode::kSeedOnly);
    }
    auto b = engine_.AddBundle(*file.bundle, file.piece_size, announce,
                               TorrentEngine::AddMode::kSeedOnly);
    if (!b.ok()) return b.status();
    return b->id;
  }();
  if (id.ok()) {
    t.id = *id;
  } else {
    t.add_error = id.status();
    Log(LogLevel::kWarn, "read.torrent_add_failed",
        {{"path", file.file.path}, {"error", id.status().ToString()}});
  }
  return t;
}

void ReadFetcher::Pursue(const Wanted& want) {
  const std::shared_ptr<const ReadFile>& file = want.file;
  const std::set<uint64_t>& pieces = want.pieces;
  const Clock::time_point now = Clock::now();
  Torrent& t = TorrentOf(*file, now);
  std::vector<uint64_t> missing;
  for (uint64_t p : pieces) {
    if (!store_.Contains(file->chunks[p])) missing.push_back(p);
  }
  if (missing.empty()) return;
  if (t.add_error.ok()) {
    for (uint64_t p : missing) {
      const uint64_t tp = file->TorrentPiece(p);
      if (!t.prioritized.insert(tp).second) continue;
      Status s = engine_.PrioritizePieces(t.id, tp, tp);
      if (!s.ok()) Log(LogLevel::kDebug, "read.prioritize_failed", {{"error", s.ToString()}});
    }
  }
  if (origin_ == nullptr && !request_origin_) return;  // peers are the only source
  {
    std::lock_guard<std::mutex> l(mu_);
    // A queued read-ahead piece that a reader now waits on moves up.
    std::unordered_set<ChunkId> heads;
    for (uint64_t p : want.heads) heads.insert(file->chunks[p]);
    for (auto it = ahead_queue_.begin(); it != ahead_queue_.end();) {
      if (heads.count(it->file->chunks[it->piece]) != 0) {
        fetch_queue_.push_back(std::move(*it));
        it = ahead_queue_.erase(it);
      } else {
        ++it;
      }
    }
    missing.erase(std::remove_if(missing.begin(), missing.end(),
                                 [&](uint64_t p) { return fetching_.count(file->chunks[p]) != 0; }),
                  missing.end());
  }
  if (missing.empty()) return;
  std::vector<uint64_t> go = DueForOrigin(*file, t, missing, now);
  if (go.empty()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (uint64_t p : go) {
      if (!fetching_.insert(file->chunks[p]).second) continue;
      t.unavailable_since.erase(file->TorrentPiece(p));
      (want.heads.count(p) != 0 ? fetch_queue_ : ahead_queue_).push_back(Fetch{file, p});
    }
  }
  fetch_cv_.notify_all();
}

std::vector<uint64_t> ReadFetcher::DueForOrigin(const ReadFile& file, Torrent& t,
                                                const std::vector<uint64_t>& missing,
                                                Clock::time_point now) {
  bool alone = !t.add_error.ok();
  bool wait_for_tracker = false;
  std::set<uint64_t> unavailable(missing.begin(), missing.end());
  if (t.add_error.ok()) {
    auto progress = engine_.Progress(t.id);
    auto none_have = engine_.UnavailablePieces(t.id);
    if (!progress.ok() || !none_have.ok()) return {};  // re-added after an eviction: next pass
    unavailable.clear();
    const std::set<uint64_t> none(none_have->begin(), none_have->end());
    for (uint64_t p : missing) {
      if (none.count(file.TorrentPiece(p)) != 0) unavailable.insert(p);
    }
    alone = MissingChunkPolicy::Alone(progress->tracker_peers, progress->peers);
    wait_for_tracker =
        policy_.ReadAwaitsTracker(progress->tracker_peers, progress->peers, t.added, now);
  }
  std::vector<uint64_t> go;
  for (uint64_t p : missing) {
    if (unavailable.count(p) == 0) {
      t.unavailable_since.erase(file.TorrentPiece(p));  // a peer has it: libtorrent is on it
      continue;
    }
    Clock::time_point since = t.unavailable_since.emplace(file.TorrentPiece(p), now).first->second;
    if (!wait_for_tracker && policy_.ReadFetchDue(alone, since, now)) go.push_back(p);
  }
  return go;
}

void ReadFetcher::FetchLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    fetch_cv_.wait(l,
                   [this] { return stopping_ || !fetch_queue_.empty() || !ahead_queue_.empty(); });
    if (stopping_) return;
    std::deque<Fetch>& from = fetch_queue_.empty() ? ahead_queue_ : fetch_queue_;
    Fetch f = std::move(from.front());
    from.pop_front();
    l.unlock();
    const Clock::time_point start = Clock::now();
    Status s = FetchFromOrigin(*f.file, f.piece);
    Log(LogLevel::kDebug, "read.origin_fetch",
        {{"chunk", f.file->chunks[f.piece].ShortHex()},
         {"ms", std::chrono::duration<double, std::milli>(Clock::now() - start).count()}});
    l.lock();
    const ChunkId& chunk = f.file->chunks[f.piece];
    fetching_.erase(chunk);
    std::vector<Waiter> woken;
    if (s.ok()) {
      fetched_.emplace_back(f.file, f.piece);
      // Its readers go now, from this thread, rather than at the loop's
      // next pass: one hand-off fewer on a cold read's path.
      if (store_.Contains(chunk)) {
        auto moved = std::stable_partition(waiters_.begin(), waiters_.end(), [&](const Waiter& w) {
          return w.file->chunks[w.piece] != chunk;
        });
        std::move(moved, waiters_.end(), std::back_inserter(woken));
        waiters_.erase(moved, waiters_.end());
      }
    } else {
      counters_.origin_failures++;
      Log(LogLevel::kWarn, "read.origin_failed",
          {{"chunk", chunk.ShortHex()}, {"error", s.ToString()}});
      failed_.emplace_back(chunk, s);
    }
    cv_.notify_all();
    l.unlock();
    for (Waiter& w : woken) w.ready(Status::OK());
    l.lock();
  }
}

Status ReadFetcher::FetchFromOrigin(const ReadFile& file, uint64_t piece) {
  const ChunkId& chunk = file.chunks[piece];
  if (request_origin_) {
    Status asked = request_origin_(file.ns, file.name, file.version, {chunk});
    if (asked.ok() || !asked.IsUnavailable() || origin_ == nullptr) return asked;
    Log(LogLevel::kWarn, "read.origin_direct",
        {{"chunk", chunk.ShortHex()}, {"why", asked.ToString()}});
  }
  if (store_.Contains(chunk)) return Status::OK();
  ChunkFetch fetch;
  fetch.id = chunk;
  fetch.size = file.PieceBytes(piece);
  const ChunkFetched sent = origin_->FetchNow(fetch);
  if (!sent.status.ok()) return sent.status;
  if (sent.bytes > 0) {
    counters_.origin_chunks++;
    counters_.origin_bytes += sent.bytes;
  }
  return Status::OK();
}

}  // namespace shoal
