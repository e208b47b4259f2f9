// PullJob's poll: one pass over the pull's torrents, and what it does about
// the chunks no peer offers.
#include <algorithm>

#include "client/tracker_client.h"
#include "daemon/destination_writer.h"
#include "daemon/origin_fetches.h"
#include "daemon/origin_turn.h"
#include "daemon/pull_job.h"
#include "p2p/torrent_engine.h"
#include "shoal/log.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// The most chunks in one ask.
constexpr size_t kMaxAsk = 1 << 16;

}  // namespace

Result<bool> PullJob::Poll() {
  SHOAL_RETURN_IF_ERROR(Interrupted());
  ReconnectTracker();
  ask_.clear();
  ring_ = ctx_.ring ? ctx_.ring() : nullptr;
  PullPace pace;
  pace.fetch_ms = fetch_ms_ewma_;
  pace.piece_size = manifest_.piece_size;
  pace.total_chunks = total_chunks_;
  pace.owners = ring_ != nullptr ? ring_->size() : 0;
  takeover_ms_ = policy_.LocalTakeoverMs(pace);
  bool all_done = true;
  state_.have_bytes = 0;
  state_.peers = 0;
  state_.files_done = 0;
  state_.bytes_from_peers = 0;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Result<bool> polled = PollTask(i, all_done);
    if (!polled.ok()) return polled.status();
    if (!*polled) continue;
    const PullTask& t = tasks_[i];
    state_.bytes_from_peers += t.from_peers;
    if (t.complete && cache_only_) state_.have_bytes += t.bytes;
    state_.files_done += t.complete && cache_only_ ? t.file_count : t.files_done;
  }
  if (!cache_only_) state_.have_bytes = writer_->bytes_written();
  SHOAL_RETURN_IF_ERROR(AskTracker());
  SHOAL_RETURN_IF_ERROR(TakeOriginFetches());
  state_.bytes_from_origin = origin_watch_->bytes();
  if (result_.first_chunk_seconds < 0 && state_.have_bytes > start_have_) {
    result_.first_chunk_seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  }
  if (progress_) progress_(state_);
  return all_done;
}

Status PullJob::Interrupted() const {
  if (req_.cancelled != nullptr && req_.cancelled->load()) {
    return Status::Unavailable("pull of " + ref_->ToString() + " cancelled: the caller went away");
  }
  if (ctx_.stopping != nullptr && ctx_.stopping->load()) {
    return Status::Unavailable("pull of " + ref_->ToString() + " cancelled: the agent is stopping");
  }
  return Status::OK();
}

bool PullJob::ConnectTracker() {
  tracker_.reset();  // its event loop first: one kj loop per thread
  auto client = TrackerClient::Connect(ctx_.options.tracker, req_.token);
  if (!client.ok()) {
    tracker_lost_ = Clock::now();
    return false;
  }
  tracker_ = std::move(client).value();
  return true;
}

void PullJob::ReconnectTracker() {
  if (tracker_ != nullptr || !policy_.MayReconnect(tracker_lost_, Clock::now())) return;
  if (ConnectTracker()) Log(LogLevel::kInfo, "pull.tracker_back", {{"ref", ref_->ToString()}});
}

bool PullJob::FailOver(const Status& why) {
  if (ctx_.options.tracker.Addresses().size() < 2 || !ConnectTracker()) return false;
  Log(LogLevel::kInfo, "pull.tracker_failover",
      {{"ref", ref_->ToString()}, {"error", why.ToString()}});
  return true;
}

Result<bool> PullJob::PollTask(size_t i, bool& all_done) {
  PullTask& t = tasks_[i];
  if (t.complete) return true;
  auto prog = ctx_.engine.Progress(t.torrent);
  if (!prog.ok() && prog.status().IsUnavailable()) {
    all_done = false;  // re-added after an eviction; ask again next round
    return false;
  }
  if (!prog.ok()) return prog.status().WithContext(t.label);
  t.from_peers = prog->bytes_from_peers;
  state_.peers += static_cast<uint32_t>(prog->peers);
  if (cache_only_) {
    if (prog->have_pieces != t.pinned_at_have || prog->complete) {
      t.pinned_at_have = prog->have_pieces;
      // A chunk evicted before its pin leaves the torrent, which then
      // downloads it again.
      if (PinHeld(ctx_.store, t) && prog->complete) t.complete = true;
    }
  } else if (prog->have_pieces != t.scanned_at_have || MsSince(t.last_scan) >= 1000) {
    t.scanned_at_have = prog->have_pieces;
    SHOAL_RETURN_IF_ERROR(WriteHeld(ctx_.store, ctx_.engine, *writer_, t));
  }
  if (t.complete) return true;
  Log(LogLevel::kDebug, "pull.file_waiting",
      {{"task", t.label},
       {"have", prog->have_pieces},
       {"total", prog->total_pieces},
       {"written", t.written_count},
       {"peers", prog->peers}});
  all_done = false;
  if (cache_only_) state_.have_bytes += t.pinned_bytes;
  Status s = PursueMissing(i, *prog);
  if (s.IsUnavailable()) return false;  // re-added after an eviction; next round
  if (!s.ok()) return s;
  return true;
}

Status PullJob::PursueMissing(size_t i, const TorrentEngine::FileProgress& prog) {
  PullTask& t = tasks_[i];
  // Nobody else in the swarm, by the tracker's reply: no peer can offer
  // anything, so there is no point waiting for one.
  const bool alone = MissingChunkPolicy::Alone(prog.tracker_peers, prog.peers);
  auto missing = ctx_.engine.UnavailablePieces(t.torrent);
  if (!missing.ok()) return missing.status();
  const std::vector<Clock::time_point> since =
      ctx_.fetcher->unoffered().Since(t.torrent, *missing, Clock::now());
  for (size_t k = 0; k < missing->size(); ++k) {
    const uint64_t p = (*missing)[k];
    if (t.written[p]) continue;  // written out, perhaps evicted since: not needed
    const Clock::time_point now = Clock::now();
    if (ctx_.store.Contains(t.chunks[p])) {
      // Stored (by another pull, or a fetch whose hand-over libtorrent
      // dropped while busy): hand it over again, at most once a second.
      auto last = t.announced.find(p);
      if (last == t.announced.end() || MsSince(last->second) >= 1000) {
        t.announced[p] = now;
        Status s = ctx_.fetcher->HandOver({t.torrent, p});
        // Re-added meanwhile: handed over next round.
        if (!s.ok() && !s.IsUnavailable()) return s.WithContext(t.label);
      }
      continue;
    }
    if (fetches_ == nullptr || !fetches_->Fetching(t.chunks[p])) Decide(i, p, since[k], alone, now);
  }
  return Status::OK();
}

void PullJob::Decide(size_t i, uint64_t p, Clock::time_point since, bool alone,
                     Clock::time_point now) {
  PullTask& t = tasks_[i];
  const bool tracker_up = tracker_ != nullptr;
  MissingChunk c;
  c.unavailable_since = since;
  auto asked = t.asked.find(p);
  if (asked != t.asked.end()) c.last_asked = asked->second;
  c.alone = alone;
  c.small = t.bundle;
  // Ranking a chunk costs a pass over the ring: only where the turn counts.
  if (fetches_ && (!tracker_up || t.bundle))
    c.turn = TurnFor(ring_.get(), ctx_.self_id, t.chunks[p]);
  switch (policy_.PullAction(c, tracker_up, fetches_ != nullptr, takeover_ms_, now)) {
    case MissingChunkAction::kWait:
      return;
    case MissingChunkAction::kAskTracker:
      ask_.push_back({i, p});
      return;
    case MissingChunkAction::kFetch:
      break;
  }
  fetches_->Add(i, p, t.chunks[p], t.chunk_bytes[p], c.turn.role, {t.torrent, p});
}

Status PullJob::AskTracker() {
  for (size_t from = 0; from < ask_.size() && tracker_ != nullptr; from += kMaxAsk) {
    const size_t to = std::min(ask_.size(), from + kMaxAsk);
    std::vector<ChunkId> chunks;
    for (size_t k = from; k < to; ++k)
      chunks.push_back(tasks_[ask_[k].first].chunks[ask_[k].second]);
    auto answer = tracker_->Need(ref_->ns(), ref_->name(), version_, chunks);
    // One tracker of a fleet lost: another takes the question at once, so
    // the pull never falls back to the local rule while the fleet answers.
    if (!answer.ok() && FailOver(answer.status()))
      answer = tracker_->Need(ref_->ns(), ref_->name(), version_, chunks);
    if (!answer.ok()) {
      Log(LogLevel::kWarn, "pull.tracker_lost",
          {{"ref", ref_->ToString()},
           {"error", answer.status().ToString()},
           {"fallback", ctx_.origin != nullptr ? "owners on the last ring fetch from the origin"
                                               : "peers only"}});
      tracker_.reset();
      tracker_lost_ = Clock::now();
      return Status::OK();
    }
    if (!answer->failed.empty()) {
      const auto& [chunk, error] = answer->failed.front();
      return Status::Unavailable(std::to_string(answer->failed.size()) + " chunks of " +
                                 ref_->ToString() +
                                 " could not be fetched from the origin by any owner; chunk " +
                                 chunk.ShortHex() + ": " + error);
    }
    for (size_t k = from; k < to; ++k) tasks_[ask_[k].first].asked[ask_[k].second] = Clock::now();
  }
  return Status::OK();
}

Status PullJob::TakeOriginFetches() {
  if (!fetches_) return Status::OK();
  for (const OriginFetches::Done& d : fetches_->TakeDone()) {
    if (!d.status.ok()) return d.status;
    PullTask& t = tasks_[d.task];
    fetch_ms_ewma_ = fetch_ms_ewma_ == 0 ? d.ms : 0.8 * fetch_ms_ewma_ + 0.2 * d.ms;
    if (d.bytes > 0 && d.role == OriginRole::kOwner) ctx_.counters.owner_fetches++;
    if (d.bytes > 0 && d.role == OriginRole::kOther) ctx_.counters.takeover_fetches++;
    ctx_.counters.CountOriginFetch(t.chunks[d.piece], d.bytes);
    // The fetcher handed it to the torrent; PursueMissing hands it over
    // again if that did not take (the torrent was being re-added).
    t.announced[d.piece] = Clock::now();
  }
  return Status::OK();
}

}  // namespace shoal
