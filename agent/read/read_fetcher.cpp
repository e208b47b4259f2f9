#include "read/read_fetcher.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

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
                         TorrentEngine& engine, ChunkFetcher& fetcher,
                         std::function<std::string()> announce_url)
    : options_(options),
      policy_(PolicyOptions(options)),
      store_(store),
      engine_(engine),
      fetcher_(fetcher),
      announce_url_(std::move(announce_url)),
      lane_(fetcher.NewLane(std::max(1, options.origin_parallelism))) {
  loop_ = std::thread([this] { Loop(); });
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
  if (loop_.joinable()) loop_.join();
  lane_.reset();  // its asks under way end; none of its callbacks runs after
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
    if (waiters_.empty()) {
      cv_.wait(l);
      continue;
    }
    l.unlock();
    for (const auto& [key, want] : Sweep()) Pursue(want);
    l.lock();
    if (!stopping_) cv_.wait_for(l, std::chrono::milliseconds(options_.poll_ms));
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
  if (!fetcher_.has_origin() && !request_origin_) return;  // peers are the only source
  // A piece asked ahead that a reader now waits on moves up; asked
  // pieces are not asked again.
  for (uint64_t p : want.heads) {
    if (lane_->Waiting(file->chunks[p])) Ask(file, p, t, FetchPriority::kWaited);
  }
  missing.erase(std::remove_if(missing.begin(), missing.end(),
                               [&](uint64_t p) { return lane_->Waiting(file->chunks[p]); }),
                missing.end());
  if (missing.empty()) return;
  for (uint64_t p : DueForOrigin(*file, t, missing, now)) {
    Ask(file, p, t, want.heads.count(p) != 0 ? FetchPriority::kWaited : FetchPriority::kAhead);
  }
}

void ReadFetcher::Ask(const std::shared_ptr<const ReadFile>& file, uint64_t piece, const Torrent& t,
                      FetchPriority priority) {
  ChunkFetch fetch;
  fetch.id = file->chunks[piece];
  fetch.size = file->PieceBytes(piece);
  if (t.add_error.ok()) fetch.seed = PieceAt{t.id, file->TorrentPiece(piece)};
  if (request_origin_) {
    fetch.elsewhere = [this, file, chunk = fetch.id] {
      return request_origin_(file->ns, file->name, file->version, {chunk});
    };
  }
  lane_->Fetch(
      fetch, [this, file, piece](const ChunkFetched& f) { Fetched(*file, piece, f); }, priority);
}

std::vector<uint64_t> ReadFetcher::DueForOrigin(const ReadFile& file, const Torrent& t,
                                                const std::vector<uint64_t>& missing,
                                                Clock::time_point now) {
  if (!t.add_error.ok()) return missing;  // no torrent, so no peer: the origin at once
  auto progress = engine_.Progress(t.id);
  auto none_have = engine_.UnavailablePieces(t.id);
  if (!progress.ok() || !none_have.ok()) return {};  // re-added after an eviction: next pass
  const std::vector<Clock::time_point> since = fetcher_.unoffered().Since(t.id, *none_have, now);
  std::map<uint64_t, Clock::time_point> unoffered;
  for (size_t k = 0; k < none_have->size(); ++k) unoffered.emplace((*none_have)[k], since[k]);
  const bool alone = MissingChunkPolicy::Alone(progress->tracker_peers, progress->peers);
  if (policy_.ReadAwaitsTracker(progress->tracker_peers, progress->peers, t.added, now)) return {};
  std::vector<uint64_t> go;
  for (uint64_t p : missing) {
    auto it = unoffered.find(file.TorrentPiece(p));
    // Offered by a peer: libtorrent is on it.
    if (it != unoffered.end() && policy_.ReadFetchDue(alone, it->second, now)) go.push_back(p);
  }
  return go;
}

void ReadFetcher::Fetched(const ReadFile& file, uint64_t piece, const ChunkFetched& f) {
  const ChunkId& chunk = file.chunks[piece];
  Log(LogLevel::kDebug, "read.origin_fetch",
      {{"chunk", chunk.ShortHex()}, {"ms", f.ms}, {"bytes", f.bytes}});
  std::vector<Waiter> woken;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (f.status.ok()) {
      if (f.bytes > 0) {
        counters_.origin_chunks++;
        counters_.origin_bytes += f.bytes;
      }
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
          {{"chunk", chunk.ShortHex()}, {"error", f.status.ToString()}});
      failed_.emplace_back(chunk, f.status);
    }
  }
  cv_.notify_all();
  for (Waiter& w : woken) w.ready(Status::OK());
}

}  // namespace shoal
