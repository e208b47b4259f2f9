#include "daemon/pull_job.h"

#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "client/tracker_client.h"
#include "daemon/destination_writer.h"
#include "daemon/origin_fetches.h"
#include "daemon/origin_turn.h"
#include "daemon/pull_tasks.h"
#include "p2p/torrent_engine.h"
#include "shoal/byte_size.h"
#include "shoal/log.h"
#include "shoal/model_ref.h"
#include "shoal/origin_fetch.h"
#include "shoal/pin_handle.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// How long an owner lets a new torrent's swarm form before it decides no
// peer has a chunk.
constexpr int64_t kSwarmFormMs = 1500;
// How long a non-owner of a small file's chunk lets its owner fetch it
// before asking the tracker.
constexpr int64_t kSmallOwnerMs = 3000;
// The longest a non-owner waits for an owner before fetching a chunk itself.
constexpr int64_t kMaxTakeoverMs = 30000;
// While the tracker is unreachable, reconnect at most this often.
constexpr int64_t kReconnectMs = 5000;
// The most chunks in one ask.
constexpr size_t kMaxAsk = 1 << 16;

// Why a pull that gains nothing waits, for its error.
std::string StallCause(PullContext& ctx) {
  StoreStats st = ctx.store.Stats();
  if (st.pinned_bytes + st.reserved_bytes + (16ull << 20) >= st.capacity_bytes) {
    return "; the cache is full: " + FormatBytes(st.pinned_bytes) + " of its " +
           FormatBytes(st.capacity_bytes) + " are held by running pulls and reads";
  }
  if (st.write_failures > 0) {
    return "; " + std::to_string(st.write_failures) +
           " writes to the cache failed (is its disk full?)";
  }
  if (ctx.origin == nullptr)
    return "; no peer has the missing chunks and this agent has no --origin";
  return "";
}

}  // namespace

Result<PullResult> RunPull(PullContext& ctx, const PullRequest& req,
                           const std::function<void(const PullState&)>& progress) {
  const Clock::time_point start = Clock::now();
  Result<ModelRef> ref = ModelRef::Parse(req.ref);
  if (!ref.ok()) return ref.status();
  const bool cache_only = req.dest == nullptr;
  auto tracker = TrackerClient::Connect(ctx.options.tracker, req.token);
  if (!tracker.ok()) return tracker.status();
  auto version = (*tracker)->Resolve(ref->ns(), ref->name(), ref->ref());
  if (!version.ok()) return version.status();
  const Manifest& m = version->manifest;
  const int64_t resolve_ms = MsSince(start);

  PullResult result;
  result.version = version->id;
  result.file_count = static_cast<uint32_t>(m.files.size());
  for (const FileEntry& f : m.files) result.total_bytes += f.size;
  auto planned = PlanPull(m);
  if (!planned.ok()) return planned.status();
  std::vector<PullTask> tasks = std::move(planned).value();
  uint64_t unique_bytes = 0;
  for (PullTask& t : tasks) {
    unique_bytes += t.bytes;
    bool all = true;
    for (uint64_t p = 0; p < t.chunks.size(); ++p) {
      if (ctx.store.Contains(t.chunks[p])) {
        result.bytes_cached += t.chunk_bytes[p];
      } else {
        all = false;
      }
    }
    if (cache_only) t.complete = all && PinHeld(ctx.store, t);
  }
  const uint64_t capacity = ctx.store.Stats().capacity_bytes;
  if (cache_only && unique_bytes > capacity) {
    return Status::NoSpace(
        ref->ToString() + " holds " + FormatBytes(unique_bytes) + " of distinct files, more than " +
        "this agent's cache of " + FormatBytes(capacity) +
        "; it cannot be warmed into the cache whole (pull it to a folder instead)");
  }
  // Torrents first, so chunks flow while the caller lays out its files
  // (seconds, for a version of many thousands).
  for (PullTask& t : tasks) {
    if (t.complete) continue;
    auto id = AddTaskTorrent(ctx.engine, t, m.piece_size, ctx.announce_url);
    if (!id.ok()) return id.status().WithContext("add " + t.label);
    t.torrent = *id;
    t.in_engine = true;
  }
  std::unique_ptr<DestinationWriter> writer;
  if (!cache_only) {
    writer = std::make_unique<DestinationWriter>(ctx.store, *req.dest, m, req.dest_label);
    SHOAL_RETURN_IF_ERROR(writer->Prepare());
    // What the cache holds now is written out, and not downloaded again.
    for (PullTask& t : tasks) SHOAL_RETURN_IF_ERROR(WriteHeld(ctx.store, ctx.engine, *writer, t));
  }

  Log(LogLevel::kInfo, "pull.ready",
      {{"ref", ref->ToString()},
       {"files", static_cast<int64_t>(m.files.size())},
       {"torrents", static_cast<int64_t>(tasks.size())},
       {"resolve_ms", resolve_ms},
       {"ready_ms", MsSince(start)}});
  std::unique_ptr<OriginFetches> fetches;
  if (ctx.origin != nullptr) {
    fetches =
        std::make_unique<OriginFetches>(*ctx.origin, ctx.store, ctx.options.origin_parallelism);
  }
  PullState state;
  state.total_bytes = result.total_bytes;
  for (const PullTask& t : tasks) state.files_total += t.file_count;
  uint64_t last_have = ~0ull;
  Clock::time_point last_change = Clock::now();
  double fetch_ms_ewma = 0;  // how long an origin fetch takes here
  uint64_t total_chunks = 0;
  for (const PullTask& t : tasks) total_chunks += t.chunks.size();
  // Chunks no peer offered go to the tracker while it answers; `asker` is
  // null while it does not, and the local rule applies.
  std::unique_ptr<TrackerClient> asker = std::move(tracker).value();
  Clock::time_point asker_lost;
  const uint64_t start_have = cache_only ? result.bytes_cached : 0;
  for (;;) {
    if (req.cancelled != nullptr && req.cancelled->load()) {
      return Status::Unavailable("pull of " + ref->ToString() + " cancelled: the caller went away");
    }
    if (ctx.stopping != nullptr && ctx.stopping->load()) {
      return Status::Unavailable("pull of " + ref->ToString() +
                                 " cancelled: the agent is stopping");
    }
    if (asker == nullptr && MsSince(asker_lost) >= kReconnectMs) {
      auto again = TrackerClient::Connect(ctx.options.tracker, req.token);
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
    const double owners =
        ring != nullptr && ring->size() > 0 ? static_cast<double>(ring->size()) : 1.0;
    const double rounds = std::ceil(static_cast<double>(total_chunks) / owners /
                                    static_cast<double>(ctx.options.origin_parallelism));
    const int64_t takeover_ms =
        std::min<int64_t>(kMaxTakeoverMs, ctx.options.origin_fallback_ms +
                                              static_cast<int64_t>((4 + 4 * rounds) * est_ms));
    bool all_done = true;
    state.have_bytes = 0;
    state.peers = 0;
    state.files_done = 0;
    state.bytes_from_peers = 0;
    for (size_t i = 0; i < tasks.size(); ++i) {
      PullTask& t = tasks[i];
      if (!t.complete) {
        auto prog = ctx.engine.Progress(t.torrent);
        if (!prog.ok() && prog.status().IsUnavailable()) {
          all_done = false;  // re-added after an eviction; ask again next round
          continue;
        }
        if (!prog.ok()) return prog.status().WithContext(t.label);
        t.from_peers = prog->bytes_from_peers;
        state.peers += static_cast<uint32_t>(prog->peers);
        if (cache_only) {
          if (prog->have_pieces != t.pinned_at_have || prog->complete) {
            t.pinned_at_have = prog->have_pieces;
            // A chunk evicted before its pin leaves the torrent, which then
            // downloads it again.
            if (PinHeld(ctx.store, t) && prog->complete) t.complete = true;
          }
        } else if (prog->have_pieces != t.scanned_at_have || MsSince(t.last_scan) >= 1000) {
          t.scanned_at_have = prog->have_pieces;
          SHOAL_RETURN_IF_ERROR(WriteHeld(ctx.store, ctx.engine, *writer, t));
        }
        if (!t.complete) {
          Log(LogLevel::kDebug, "pull.file_waiting",
              {{"task", t.label},
               {"have", prog->have_pieces},
               {"total", prog->total_pieces},
               {"written", t.written_count},
               {"peers", prog->peers}});
          all_done = false;
          if (cache_only) state.have_bytes += t.pinned_bytes;
          // Nobody else in the swarm, by the tracker's reply: no peer can
          // offer anything, so there is no point waiting for one.
          const bool alone = prog->tracker_peers == 0 && prog->peers == 0;
          auto missing = ctx.engine.UnavailablePieces(t.torrent);
          if (!missing.ok() && missing.status().IsUnavailable()) continue;
          if (!missing.ok()) return missing.status();
          std::map<uint64_t, Clock::time_point> still;
          for (uint64_t p : *missing) {
            if (t.written[p]) continue;  // written out, perhaps evicted since: not needed
            auto it = t.unavailable_since.find(p);
            still[p] = it == t.unavailable_since.end() ? Clock::now() : it->second;
            if (ctx.store.Contains(t.chunks[p])) {
              // Stored (by another pull, or a fetch whose hand-over libtorrent
              // dropped while busy): hand it over again, at most once a second.
              auto last = t.announced.find(p);
              if (last == t.announced.end() || MsSince(last->second) >= 1000) {
                t.announced[p] = Clock::now();
                Status s = ctx.engine.ChunkArrived(t.torrent, p);
                if (!s.ok() && !s.IsUnavailable()) return s;  // re-added meanwhile: next round
              }
              continue;
            }
            if (t.fetching[p]) continue;
            if (asker != nullptr && t.bundle && fetches) {
              // A small file's chunk is one short GET, and one fetch order
              // per chunk would pace the pull by the orders' round trips:
              // its first owner on the ring fetches it itself once the swarm
              // has had a moment to form, and anyone else gives the owner a
              // moment more before asking the tracker (which then has the
              // owner fetch it, or take over).
              OriginTurn turn = TurnFor(ring.get(), ctx.self_id, t.chunks[p]);
              if (turn.role == OriginRole::kOwner) {
                if (alone || MsSince(still[p]) >= swarm_form_ms) {
                  t.fetching[p] = true;
                  ctx.counters.owner_fetches++;
                  fetches->Add(i, p, t.chunks[p], t.chunk_bytes[p]);
                }
                continue;
              }
              if (turn.role == OriginRole::kOther && !alone &&
                  MsSince(still[p]) < swarm_form_ms + kSmallOwnerMs) {
                continue;
              }
            }
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
            // owner on the last ring seen fetches it once the swarm has had
            // a moment to form; anyone else waits for it to appear in the
            // swarm; the k-th in the chunk's ranking takes over after k
            // timeouts, each growing with how long origin fetches take.
            OriginTurn turn = TurnFor(ring.get(), ctx.self_id, t.chunks[p]);
            const int64_t wait =
                turn.role == OriginRole::kOwner ? swarm_form_ms
                : turn.role == OriginRole::kNoRing
                    ? ctx.options.origin_fallback_ms
                    : std::min<int64_t>(
                          kMaxTakeoverMs,
                          swarm_form_ms + static_cast<int64_t>(turn.rank) * takeover_ms);
            if (MsSince(still[p]) >= wait) {
              t.fetching[p] = true;
              if (turn.role == OriginRole::kOwner) ctx.counters.owner_fetches++;
              if (turn.role == OriginRole::kOther) ctx.counters.takeover_fetches++;
              fetches->Add(i, p, t.chunks[p], t.chunk_bytes[p]);
            }
          }
          t.unavailable_since = std::move(still);
        }
      }
      state.bytes_from_peers += t.from_peers;
      if (t.complete && cache_only) state.have_bytes += t.bytes;
      state.files_done += t.complete && cache_only ? t.file_count : t.files_done;
    }
    if (!cache_only) state.have_bytes = writer->bytes_written();
    for (size_t from = 0; from < ask.size() && asker != nullptr; from += kMaxAsk) {
      size_t to = std::min(ask.size(), from + kMaxAsk);
      std::vector<ChunkId> chunks;
      for (size_t k = from; k < to; ++k)
        chunks.push_back(tasks[ask[k].first].chunks[ask[k].second]);
      auto answer = asker->Need(ref->ns(), ref->name(), version->id, chunks);
      if (!answer.ok()) {
        Log(LogLevel::kWarn, "pull.tracker_lost",
            {{"ref", ref->ToString()},
             {"error", answer.status().ToString()},
             {"fallback", ctx.origin != nullptr ? "owners on the last ring fetch from the origin"
                                                : "peers only"}});
        asker.reset();
        asker_lost = Clock::now();
        break;
      }
      if (!answer->failed.empty()) {
        const auto& [chunk, error] = answer->failed.front();
        return Status::Unavailable(std::to_string(answer->failed.size()) + " chunks of " +
                                   ref->ToString() +
                                   " could not be fetched from the origin by any owner; chunk " +
                                   chunk.ShortHex() + ": " + error);
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
        if (!s.ok() && !s.IsUnavailable()) return s;  // re-added meanwhile: handed over next round
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
    } else if (MsSince(last_change) > ctx.options.stall_timeout_ms) {
      return Status::Unavailable("pull of " + ref->ToString() + " gained no byte for " +
                                 std::to_string(ctx.options.stall_timeout_ms / 1000) + " s" +
                                 StallCause(ctx));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  fetches.reset();
  for (const PullTask& t : tasks) result.bytes_from_peers += t.from_peers;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (cache_only) {
    Log(LogLevel::kInfo, "prefetch.done",
        {{"ref", ref->ToString()},
         {"version", result.version.ToHex()},
         {"bytes", result.total_bytes},
         {"from_peers", result.bytes_from_peers},
         {"from_origin", result.bytes_from_origin},
         {"seconds", result.seconds}});
    return result;
  }
  ctx.counters.pulls++;
  Log(LogLevel::kInfo, "pull.done",
      {{"ref", ref->ToString()},
       {"version", result.version.ToHex()},
       {"dest", req.dest_label},
       {"bytes", result.total_bytes},
       {"from_peers", result.bytes_from_peers},
       {"from_origin", result.bytes_from_origin},
       {"cached", result.bytes_cached},
       {"seconds", result.seconds}});
  return result;
}

}  // namespace shoal
