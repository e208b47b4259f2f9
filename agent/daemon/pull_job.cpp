#include "daemon/pull_job.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "client/tracker_client.h"
#include "daemon/origin_fetch.h"
#include "daemon/origin_fetches.h"
#include "p2p/torrent_engine.h"
#include "shoal/log.h"
#include "shoal/model_ref.h"
#include "shoal/pin_handle.h"

namespace shoal {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// One distinct file of the version (identical files share one).
struct FileTask {
  const FileEntry* file = nullptr;
  std::vector<ChunkId> chunks;
  FileTorrentId torrent;
  bool in_engine = false;
  bool complete = false;
  uint64_t from_peers = 0;
  std::map<uint64_t, Clock::time_point> unavailable_since;
  std::map<uint64_t, bool> fetching;
  std::map<uint64_t, Clock::time_point> announced;  // last ChunkArrived for a piece
  std::map<uint64_t, Clock::time_point> asked;      // last asked of the tracker
  std::vector<PinHandle> pins;  // per piece: held until the pull ends, so nothing it has is evicted
  uint64_t pinned_at_have = ~0ull;  // the engine's piece count at the last PinHeld
};

// Pins the chunks of `t` the store holds that are not pinned yet. Returns
// whether every chunk of the file is pinned.
bool PinHeld(ChunkStore& store, FileTask& t) {
  t.pins.resize(t.chunks.size());
  size_t pinned = 0;
  for (uint64_t p = 0; p < t.chunks.size(); ++p) {
    if (!t.pins[p].valid() && store.Contains(t.chunks[p])) {
      auto pin = store.Pin(t.chunks[p]);
      if (pin.ok()) t.pins[p] = std::move(pin).value();
    }
    if (t.pins[p].valid()) ++pinned;
  }
  return pinned == t.chunks.size();
}


enum class OriginRole { kNoRing, kOwner, kOther };

// How long an owner lets a new torrent's swarm form before it decides no
// peer has a chunk.
constexpr int64_t kSwarmFormMs = 1500;
// The longest a non-owner waits for an owner before fetching a chunk itself.
constexpr int64_t kMaxTakeoverMs = 30000;
// While the tracker is unreachable, reconnect at most this often.
constexpr int64_t kReconnectMs = 5000;
// The most chunks in one ask.
constexpr size_t kMaxAsk = 1 << 16;

struct OriginTurn {
  OriginRole role;
  size_t rank;  // this agent's place in the chunk's ranking; 0 = owner
};

// Where this agent stands for `chunk`: every agent ranks the live members
// the same way, so when an owner does not deliver, the next in rank takes
// over first, then the next, one at a time, and a dead owner costs about
// one extra fetch rather than one per waiting agent.
OriginTurn TurnFor(const PullContext& ctx, const HashRing* ring, const ChunkId& chunk) {
  if (ring == nullptr || ring->size() == 0 || ctx.self_id.empty()) return {OriginRole::kNoRing, 0};
  std::vector<std::string> ranked = ring->Owners(chunk, static_cast<int>(ring->size()));
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i] == ctx.self_id) return {i == 0 ? OriginRole::kOwner : OriginRole::kOther, i};
  }
  return {OriginRole::kOther, ranked.size()};  // not in this ring yet: last
}

// Writes the version into `tmp`, read-only files.
Status MaterializeInto(ChunkStore& store, const Manifest& m, const std::string& tmp) {
  std::error_code ec;
  for (const std::string& d : m.empty_dirs) {
    fs::create_directories(tmp + "/" + d, ec);
    if (ec) return Status::IOError("create " + tmp + "/" + d + ": " + ec.message());
  }
  for (const FileEntry& f : m.files) {
    std::string path = tmp + "/" + f.path;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) return Status::IOError("create folder for " + path + ": " + ec.message());
    uint32_t mode = f.mode & 0555;
    if (f.size == 0) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
      if (fd < 0) return Status::FromErrno("create " + path, errno);
      ::close(fd);
      continue;
    }
    SHOAL_RETURN_IF_ERROR(store.Materialize(f.ChunkIds(), f.size, m.piece_size, path, mode));
  }
  return Status::OK();
}

// Moves `tmp` to `dest`, swapping atomically with an existing `dest`.
Status SwapIntoPlace(const std::string& tmp, const std::string& dest) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) == 0) return Status::OK();
  if (errno != EEXIST) return Status::FromErrno("rename " + tmp + " to " + dest, errno);
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0) {
    return Status::FromErrno("swap " + tmp + " with " + dest, errno);
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);  // now the previous contents
  return Status::OK();
}

}  // namespace

Result<PullResult> RunPull(PullContext& ctx, const std::string& ref_text, const std::string& token,
                           const std::string& dest, const std::function<void(const PullState&)>& progress) {
  const Clock::time_point start = Clock::now();
  Result<ModelRef> ref = ModelRef::Parse(ref_text);
  if (!ref.ok()) return ref.status();
  const bool cache_only = dest.empty();
  if (!cache_only && dest[0] != '/') return Status::InvalidArgument("destination '" + dest + "' must be an absolute path");
  fs::path parent = fs::path(dest).parent_path();
  if (!cache_only && !fs::is_directory(parent)) {
    return Status::NotFound("destination's folder " + parent.string() + " does not exist");
  }
  auto tracker = TrackerClient::Connect(ctx.options.tracker, token);
  if (!tracker.ok()) return tracker.status();
  auto version = (*tracker)->Resolve(ref->ns(), ref->name(), ref->ref());
  if (!version.ok()) return version.status();
  const Manifest& m = version->manifest;

  PullResult result;
  result.version = version->id;
  result.file_count = static_cast<uint32_t>(m.files.size());
  std::vector<FileTask> tasks;
  std::map<PiecesRoot, size_t> by_root;
  for (const FileEntry& f : m.files) {
    result.total_bytes += f.size;
    if (f.size == 0 || by_root.count(f.pieces_root) != 0) continue;
    by_root[f.pieces_root] = tasks.size();
    FileTask t;
    t.file = &f;
    t.chunks = f.ChunkIds();
    bool all = true;
    for (uint64_t p = 0; p < t.chunks.size(); ++p) {
      if (ctx.store.Contains(t.chunks[p])) {
        result.bytes_cached += f.ChunkBytes(m.piece_size, p);
      } else {
        all = false;
      }
    }
    t.complete = all && PinHeld(ctx.store, t);
    tasks.push_back(std::move(t));
  }
  for (FileTask& t : tasks) {
    if (t.complete) continue;
    auto id = ctx.engine.AddFile(*t.file, m.piece_size, ctx.announce_url);
    if (!id.ok()) return id.status().WithContext("add " + t.file->path);
    t.torrent = *id;
    t.in_engine = true;
  }

  std::unique_ptr<OriginFetches> fetches;
  if (ctx.origin != nullptr) {
    fetches = std::make_unique<OriginFetches>(*ctx.origin, ctx.store, ctx.options.origin_parallelism);
  }
  PullState state;
  state.total_bytes = result.total_bytes;
  state.files_total = static_cast<uint32_t>(tasks.size());
  uint64_t last_have = 0;
  Clock::time_point last_change = Clock::now();
  double fetch_ms_ewma = 0;  // how long an origin fetch takes here
  uint64_t total_chunks = 0;
  for (const FileTask& t : tasks) total_chunks += t.chunks.size();
  // Chunks no peer offered go to the tracker while it answers; `asker` is
  // null while it does not, and the local rule applies.
  std::unique_ptr<TrackerClient> asker = std::move(tracker).value();
  Clock::time_point asker_lost;
  const uint64_t start_have = result.bytes_cached;
  for (;;) {
    if (asker == nullptr && MsSince(asker_lost) >= kReconnectMs) {
      auto again = TrackerClient::Connect(ctx.options.tracker, token);
      if (again.ok()) {
        asker = std::move(again).value();
        Log(LogLevel::kInfo, "pull.tracker_back", {{"ref", ref->ToString()}});
      } else {
        asker_lost = Clock::now();
      }
    }
    std::vector<std::pair<size_t, uint64_t>> ask;  // (task, piece), in file order
    // How long a new torrent's swarm gets to show a chunk before it is
    // taken as missing (the first announce and connections).
    const int64_t swarm_form_ms = std::min<int64_t>(ctx.options.origin_fallback_ms, kSwarmFormMs);
    std::shared_ptr<const HashRing> ring = ctx.ring ? ctx.ring() : nullptr;
    // An owner needs the swarm to form, then the time to fetch its share of
    // the chunks, origin_parallelism at a time, on a busy node. Before this
    // agent has timed a fetch itself, assume 25 MB/s for a full piece.
    const double est_ms = std::max(fetch_ms_ewma, static_cast<double>(m.piece_size) / 25e3);
    const double owners = ring != nullptr && ring->size() > 0 ? static_cast<double>(ring->size()) : 1.0;
    const double rounds = std::ceil(static_cast<double>(total_chunks) / owners /
                                    static_cast<double>(ctx.options.origin_parallelism));
    const int64_t takeover_ms = std::min<int64_t>(
        kMaxTakeoverMs, ctx.options.origin_fallback_ms + static_cast<int64_t>((4 + 4 * rounds) * est_ms));
    bool all_done = true;
    state.have_bytes = 0;
    state.peers = 0;
    state.files_done = 0;
    state.bytes_from_peers = 0;
    for (size_t i = 0; i < tasks.size(); ++i) {
      FileTask& t = tasks[i];
      if (!t.complete) {
        auto prog = ctx.engine.Progress(t.torrent);
        if (!prog.ok() && prog.status().IsUnavailable()) {
          all_done = false;  // re-added after an eviction; ask again next round
          continue;
        }
        if (!prog.ok()) return prog.status().WithContext(t.file->path);
        t.from_peers = prog->bytes_from_peers;
        state.peers += static_cast<uint32_t>(prog->peers);
        if (prog->have_pieces != t.pinned_at_have || prog->complete) {
          t.pinned_at_have = prog->have_pieces;
          // A chunk evicted before its pin leaves the torrent, which then
          // downloads it again.
          if (PinHeld(ctx.store, t) && prog->complete) t.complete = true;
        }
        if (!t.complete) {
          Log(LogLevel::kDebug, "pull.file_waiting",
              {{"path", t.file->path}, {"have", prog->have_pieces}, {"total", prog->total_pieces},
               {"peers", prog->peers}});
          all_done = false;
          state.have_bytes += std::min<uint64_t>(t.file->size, prog->have_pieces * m.piece_size);
          // Nobody else in the swarm, by the tracker's reply: no peer can
          // offer anything, so there is no point waiting for one.
          const bool alone = prog->tracker_peers == 0 && prog->peers == 0;
          {
            auto missing = ctx.engine.UnavailablePieces(t.torrent);
            if (!missing.ok() && missing.status().IsUnavailable()) continue;
            if (!missing.ok()) return missing.status();
            std::map<uint64_t, Clock::time_point> still;
            for (uint64_t p : *missing) {
              auto it = t.unavailable_since.find(p);
              still[p] = it == t.unavailable_since.end() ? Clock::now() : it->second;
              if (ctx.store.Contains(t.chunks[p])) {
                // Stored (by another pull, or a fetch whose hand-over libtorrent
                // dropped while busy): hand it over again, at most once a second.
                auto last = t.announced.find(p);
                if (last == t.announced.end() || MsSince(last->second) >= 1000) {
                  t.announced[p] = Clock::now();
                  Status s = ctx.engine.ChunkArrived(t.torrent, p);
                  if (!s.ok()) return s;
                }
                continue;
              }
              if (t.fetching[p]) continue;
              if (asker != nullptr) {
                // The tracker decides who fetches it, once the swarm has had
                // a moment to show whether some peer has it.
                auto asked = t.asked.find(p);
                if ((alone || MsSince(still[p]) >= swarm_form_ms) &&
                    (asked == t.asked.end() || MsSince(asked->second) >= kNeedAskAgainMs)) {
                  ask.push_back({i, p});
                }
                continue;
              }
              if (!fetches) continue;
              // The local rule, while the tracker is away: a chunk's first
              // owner on the last ring seen fetches it once the swarm has
              // had a moment to form; anyone else waits for it to appear in
              // the swarm; the k-th in the chunk's ranking takes over after
              // k timeouts, each growing with how long origin fetches take.
              OriginTurn turn = TurnFor(ctx, ring.get(), t.chunks[p]);
              OriginRole role = turn.role;
              const int64_t owner_wait = swarm_form_ms;
              int64_t wait = role == OriginRole::kOwner    ? owner_wait
                             : role == OriginRole::kNoRing ? ctx.options.origin_fallback_ms
                                                           : std::min<int64_t>(kMaxTakeoverMs,
                                                                               owner_wait + static_cast<int64_t>(turn.rank) * takeover_ms);
              if (MsSince(still[p]) >= wait) {
                t.fetching[p] = true;
                if (role == OriginRole::kOwner) ctx.counters.owner_fetches++;
                if (role == OriginRole::kOther) ctx.counters.takeover_fetches++;
                fetches->Add(i, p, t.chunks[p], t.file->ChunkBytes(m.piece_size, p));
              }
            }
            t.unavailable_since = std::move(still);
          }
        }
      }
      state.bytes_from_peers += t.from_peers;
      if (t.complete) {
        state.have_bytes += t.file->size;
        ++state.files_done;
      }
    }
    for (size_t from = 0; from < ask.size() && asker != nullptr; from += kMaxAsk) {
      size_t to = std::min(ask.size(), from + kMaxAsk);
      std::vector<ChunkId> chunks;
      for (size_t k = from; k < to; ++k) chunks.push_back(tasks[ask[k].first].chunks[ask[k].second]);
      auto answer = asker->Need(ref->ns(), ref->name(), version->id, chunks);
      if (!answer.ok()) {
        Log(LogLevel::kWarn, "pull.tracker_lost",
            {{"ref", ref->ToString()}, {"error", answer.status().ToString()},
             {"fallback", ctx.origin != nullptr ? "owners on the last ring fetch from the origin" : "peers only"}});
        asker.reset();
        asker_lost = Clock::now();
        break;
      }
      if (!answer->failed.empty()) {
        const auto& [chunk, error] = answer->failed.front();
        return Status::Unavailable(std::to_string(answer->failed.size()) + " chunks of " + ref->ToString() +
                                   " could not be fetched from the origin by any owner; chunk " + chunk.ShortHex() +
                                   ": " + error);
      }
      for (size_t k = from; k < to; ++k) tasks[ask[k].first].asked[ask[k].second] = Clock::now();
    }
    if (fetches) {
      for (const OriginFetches::Done& d : fetches->TakeDone()) {
        if (!d.status.ok()) return d.status;
        fetch_ms_ewma = fetch_ms_ewma == 0 ? d.ms : 0.8 * fetch_ms_ewma + 0.2 * d.ms;
        result.bytes_from_origin += d.bytes;
        ctx.counters.bytes_from_origin += d.bytes;
        ctx.counters.origin_chunks++;
        tasks[d.task].fetching[d.piece] = false;
        tasks[d.task].announced[d.piece] = Clock::now();
        Status s = ctx.engine.ChunkArrived(tasks[d.task].torrent, d.piece);
        if (!s.ok()) return s;
      }
    }
    state.bytes_from_origin = result.bytes_from_origin;
    if (result.first_chunk_seconds < 0 && state.have_bytes > start_have) {
      result.first_chunk_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    if (progress) progress(state);
    if (all_done) break;
    if (state.have_bytes != last_have) {
      last_have = state.have_bytes;
      last_change = Clock::now();
    } else if (MsSince(last_change) > 10 * 60 * 1000) {
      return Status::Unavailable("pull of " + ref->ToString() + " made no progress for 10 minutes" +
                                 (ctx.origin ? "" : "; no peer has the missing chunks and this agent has no --origin"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  fetches.reset();
  for (const FileTask& t : tasks) result.bytes_from_peers += t.from_peers;
  if (cache_only) {
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Log(LogLevel::kInfo, "prefetch.done",
        {{"ref", ref->ToString()}, {"version", result.version.ToHex()}, {"bytes", result.total_bytes},
         {"from_peers", result.bytes_from_peers}, {"from_origin", result.bytes_from_origin},
         {"seconds", result.seconds}});
    return result;
  }

  std::string tmp = dest + ".shoal-tmp-" + std::to_string(::getpid()) + "-" +
                    std::to_string(Clock::now().time_since_epoch().count() % 1000000);
  std::error_code ec;
  fs::create_directory(tmp, ec);
  if (ec) return Status::IOError("create " + tmp + ": " + ec.message());
  Status s = MaterializeInto(ctx.store, m, tmp);
  if (s.ok()) s = SwapIntoPlace(tmp, dest);
  if (!s.ok()) {
    fs::remove_all(tmp, ec);
    return s;
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ctx.counters.pulls++;
  Log(LogLevel::kInfo, "pull.done",
      {{"ref", ref->ToString()}, {"version", result.version.ToHex()}, {"bytes", result.total_bytes},
       {"from_peers", result.bytes_from_peers}, {"from_origin", result.bytes_from_origin},
       {"cached", result.bytes_cached}, {"seconds", result.seconds}});
  return result;
}

}  // namespace shoal
