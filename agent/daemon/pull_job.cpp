#include "daemon/pull_job.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "client/tracker_client.h"
#include "daemon/destination_writer.h"
#include "daemon/origin_fetches.h"
#include "p2p/torrent_engine.h"
#include "shoal/byte_size.h"
#include "shoal/log.h"
#include "shoal/pin_handle.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

// How long a pull waits, gaining nothing while the cache refuses writes that
// no eviction can make room for, before it fails: long enough for a pin
// held by a read or another pull's last write to go.
constexpr int64_t kNoSpaceGraceMs = 5000;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

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

PullJob::PullJob(PullContext& ctx, const PullRequest& req, Progress progress)
    : ctx_(ctx),
      req_(req),
      progress_(std::move(progress)),
      policy_(ctx.options.MissingChunks()),
      start_(Clock::now()),
      cache_only_(req.dest == nullptr) {}

PullJob::~PullJob() = default;

Result<PullResult> PullJob::Run() {
  SHOAL_RETURN_IF_ERROR(Resolve());
  const int64_t resolve_ms = MsSince(start_);
  SHOAL_RETURN_IF_ERROR(Plan());
  Log(LogLevel::kInfo, "pull.ready",
      {{"ref", ref_->ToString()},
       {"files", static_cast<int64_t>(manifest_.files.size())},
       {"torrents", static_cast<int64_t>(tasks_.size())},
       {"resolve_ms", resolve_ms},
       {"ready_ms", MsSince(start_)}});
  last_change_ = Clock::now();
  for (;;) {
    Result<bool> done = Poll();
    if (!done.ok()) return done.status();
    if (*done) break;
    SHOAL_RETURN_IF_ERROR(CheckSpace());
    SHOAL_RETURN_IF_ERROR(CheckStall());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Finish();
}

Status PullJob::Resolve() {
  Result<ModelRef> ref = ModelRef::Parse(req_.ref);
  if (!ref.ok()) return ref.status();
  ref_ = *ref;
  auto tracker = TrackerClient::Connect(ctx_.options.tracker, req_.token);
  if (!tracker.ok()) return tracker.status();
  std::string wanted = ref_->ref();
  if (!req_.labels.empty()) {
    auto versions = (*tracker)->ListVersions(ref_->ns(), ref_->name(), req_.labels);
    if (!versions.ok()) return versions.status();
    if (versions->empty()) {
      return Status::NotFound(NoVersionWithLabels(ref_->ns() + "/" + ref_->name(), req_.labels));
    }
    wanted = versions->front().id.ToHex();  // newest first
  }
  auto version = (*tracker)->Resolve(ref_->ns(), ref_->name(), wanted);
  if (!version.ok()) return version.status();
  version_ = version->id;
  version_state_ = version->state;
  manifest_ = std::move(version->manifest);
  tracker_ = std::move(tracker).value();
  return Status::OK();
}

Status PullJob::Plan() {
  result_.version = version_;
  result_.file_count = static_cast<uint32_t>(manifest_.files.size());
  for (const FileEntry& f : manifest_.files) result_.total_bytes += f.size;
  auto planned = PlanPull(manifest_);
  if (!planned.ok()) return planned.status();
  tasks_ = std::move(planned).value();
  std::vector<ChunkId> lacking;
  for (PullTask& t : tasks_) {
    unique_bytes_ += t.bytes;
    total_chunks_ += t.chunks.size();
    bool all = true;
    for (uint64_t p = 0; p < t.chunks.size(); ++p) {
      if (ctx_.store.Contains(t.chunks[p])) {
        result_.bytes_cached += t.chunk_bytes[p];
      } else {
        all = false;
        lacking.push_back(t.chunks[p]);
      }
    }
    if (cache_only_) t.complete = all && PinHeld(ctx_.store, t);
  }
  origin_watch_ = ctx_.counters.origin_ledger.Start(lacking);
  const uint64_t capacity = ctx_.store.Stats().capacity_bytes;
  if (cache_only_ && unique_bytes_ > capacity) {
    return Status::NoSpace(ref_->ToString() + " holds " + FormatBytes(unique_bytes_) +
                           " of distinct files, more than " + "this agent's cache of " +
                           FormatBytes(capacity) +
                           "; it cannot be warmed into the cache whole (pull it to a folder "
                           "instead)");
  }
  // Torrents first, so chunks flow while the caller lays out its files
  // (seconds, for a version of many thousands).
  for (PullTask& t : tasks_) {
    if (t.complete) continue;
    auto id = AddTaskTorrent(ctx_.engine, t, manifest_.piece_size, ctx_.announce_url);
    if (!id.ok()) return id.status().WithContext("add " + t.label);
    t.torrent = *id;
    t.in_engine = true;
  }
  if (!cache_only_) {
    writer_ =
        std::make_unique<DestinationWriter>(ctx_.store, *req_.dest, manifest_, req_.dest_label);
    SHOAL_RETURN_IF_ERROR(writer_->Prepare());
    // What the cache holds now is written out, and not downloaded again.
    for (PullTask& t : tasks_)
      SHOAL_RETURN_IF_ERROR(WriteHeld(ctx_.store, ctx_.engine, *writer_, t));
  }
  // A version still uploading may lack chunks in the origin: its publisher's
  // agent has them all, so this pull takes them from peers alone.
  if (ctx_.origin != nullptr && version_state_ != VersionState::kUploading) {
    fetches_ = std::make_unique<OriginFetches>(*ctx_.fetcher, ctx_.options.origin_parallelism,
                                               &ctx_.counters.origin_bytes_read);
  }
  state_.total_bytes = result_.total_bytes;
  for (const PullTask& t : tasks_) state_.files_total += t.file_count;
  start_have_ = cache_only_ ? result_.bytes_cached : 0;
  return Status::OK();
}

Status PullJob::CheckStall() {
  if (state_.have_bytes != last_have_) {
    last_have_ = state_.have_bytes;
    last_change_ = Clock::now();
    return Status::OK();
  }
  if (MsSince(last_change_) <= ctx_.options.stall_timeout_ms) return Status::OK();
  return Status::Unavailable("pull of " + ref_->ToString() + " gained no byte for " +
                             std::to_string(ctx_.options.stall_timeout_ms / 1000) + " s" +
                             StallCause(ctx_));
}

Status PullJob::CheckSpace() {
  if (MsSince(last_change_) < kNoSpaceGraceMs) return Status::OK();
  const StoreSpace space = ctx_.store.Space();
  if (!space.refusing || space.room || space.refusing_ms < kNoSpaceGraceMs) return Status::OK();
  const uint64_t needed =
      result_.total_bytes > state_.have_bytes ? result_.total_bytes - state_.have_bytes : 0;
  return Status::NoSpace("pull of " + ref_->ToString() + " stopped: the cache in " +
                         ctx_.options.cache_dir + " has no room, " +
                         FormatBytes(space.disk_free_bytes) +
                         " free on its filesystem, and the pull needs " + FormatBytes(needed) +
                         " more (" + space.why + ")");
}

PullResult PullJob::Finish() {
  fetches_.reset();
  // Every byte of the version once: the origin's, what the cache held
  // (and repeats), and the rest, from peers.
  const uint64_t from_origin = origin_watch_->bytes();
  const uint64_t held = result_.bytes_cached + from_origin;
  result_.bytes_from_origin = from_origin;
  result_.bytes_from_peers = unique_bytes_ > held ? unique_bytes_ - held : 0;
  result_.bytes_cached = result_.total_bytes - result_.bytes_from_peers - from_origin;
  origin_watch_.reset();
  result_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  if (!cache_only_) ctx_.counters.pulls++;
  Log(LogLevel::kInfo, cache_only_ ? "prefetch.done" : "pull.done",
      {{"ref", ref_->ToString()},
       {"version", result_.version.ToHex()},
       {"dest", req_.dest_label},
       {"bytes", result_.total_bytes},
       {"from_peers", result_.bytes_from_peers},
       {"from_origin", result_.bytes_from_origin},
       {"cached", result_.bytes_cached},
       {"seconds", result_.seconds}});
  return result_;
}

Result<PullResult> RunPull(PullContext& ctx, const PullRequest& req,
                           const std::function<void(const PullState&)>& progress) {
  return PullJob(ctx, req, progress).Run();
}

}  // namespace shoal
