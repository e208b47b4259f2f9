// PullJob: one `shoal pull` on this node, from name to folder.
//
// Resolves the name with the caller's token (so a pod reads only what its
// token allows) and checks the manifest's signature; adds one torrent per
// distinct file; asks the tracker for chunks no peer has offered once the
// swarm has had a moment to form (the tracker has their owners fetch them
// from the origin, paced cluster-wide; see tracker/scheduler/fetch_scheduler.h), and
// asks again for any still missing. Each chunk is written into the caller's
// files as soon as it is in the cache (DestinationWriter), and from then on
// the cache may evict it: a version larger than the cache still pulls. The
// caller moves the finished folder into place itself.
//
// A pull that gains no byte for `stall_timeout_ms` fails, naming what it
// waits for; one whose caller goes away, or whose agent stops, ends within
// a poll period and releases its pins and threads. A full cache disk is
// waited out while eviction could make room (the engine resumes a torrent
// whose writes stopped once the store has room again). When no eviction
// could make room for the refused write and the pull has gained nothing
// for 5 s (kNoSpaceGraceMs), it fails with NoSpace, naming the cache
// folder, the free space and what the pull still needs.
//
// While the tracker cannot be reached, the agent falls back to a local
// rule: a chunk's first owner on the last ring it saw fetches it itself,
// and the k-th in rank takes over after k bounded, adaptive timeouts. Every
// wait is MissingChunkPolicy's.
//
// The summary accounts for every byte of the version: from the origin (the
// chunks this agent read from it while the pull ran, for whatever reason:
// the local rule, or a fetch order as their owner; see origin_ledger.h),
// already cached (the chunks the cache held when the pull began, and the
// repeats of content the version holds more than once), and from peers
// (the rest).
//
// Thread-safety: Run() blocks; run each job on its own thread. The engine,
// store and origin it uses are thread-safe.
#ifndef SHOAL_AGENT_DAEMON_PULL_JOB_H_
#define SHOAL_AGENT_DAEMON_PULL_JOB_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/agent_options.h"
#include "daemon/caller_files.h"
#include "daemon/origin_ledger.h"
#include "daemon/pull_tasks.h"
#include "shoal/chunk_store.h"
#include "shoal/hash_ring.h"
#include "shoal/manifest.h"
#include "shoal/missing_chunk_policy.h"
#include "shoal/model_ref.h"
#include "shoal/origin.h"
#include "shoal/registry_records.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

class ChunkFetcher;
class OriginFetches;
class TrackerClient;

struct PullState {
  uint64_t total_bytes = 0;
  uint64_t have_bytes = 0;
  uint64_t bytes_from_peers = 0;
  uint64_t bytes_from_origin = 0;
  uint32_t peers = 0;
  uint32_t files_done = 0;
  uint32_t files_total = 0;
};

// bytes_from_peers + bytes_from_origin + bytes_cached == total_bytes.
struct PullResult {
  VersionId version;
  uint64_t total_bytes = 0;
  uint64_t bytes_from_peers = 0;
  uint64_t bytes_from_origin = 0;  // read from the origin by this agent while the pull ran
  uint64_t bytes_cached = 0;       // in the cache when the pull began, or repeated content
  double seconds = 0;
  double first_chunk_seconds = -1;  // when the first missing chunk arrived; -1 if none was missing
  uint32_t file_count = 0;
};

// Node-wide counters the pull jobs add to, for /metrics and heartbeats.
struct PullCounters {
  std::atomic<uint64_t> pulls{0}, pull_failures{0};
  // Chunks and bytes the origin sent this agent for pulls and fetch orders.
  std::atomic<uint64_t> bytes_from_origin{0}, origin_chunks{0};
  // Bytes the origin sent, counted as they arrive (ChunkFetch::streamed).
  std::atomic<uint64_t> origin_bytes_read{0};
  std::atomic<uint64_t> owner_fetches{0};     // origin fetches as the chunk's owner
  std::atomic<uint64_t> takeover_fetches{0};  // origin fetches after the owner did not deliver
  std::atomic<uint64_t> replica_chunks{0};    // chunks copied from the swarm as a later owner
  std::atomic<uint64_t> replica_owner_connects{0};  // connections a replica order made to owners
  OriginLedger origin_ledger;                       // tells the pulls which chunks the origin sent

  // The origin sent this agent `bytes` of `chunk` (0: it was here already).
  void CountOriginFetch(const ChunkId& chunk, uint64_t bytes) {
    if (bytes == 0) return;
    bytes_from_origin += bytes;
    origin_chunks++;
    origin_ledger.Record(chunk, bytes);
  }
};

struct PullContext {
  const AgentOptions& options;
  ChunkStore& store;
  TorrentEngine& engine;
  Origin* origin;            // null: no origin fallback
  ChunkFetcher* fetcher;     // every origin read goes through it
  std::string announce_url;  // http://tracker:port/announce?token=...&zone=...
  PullCounters& counters;
  // The current ring of owners and this agent's ID in it. With no ring,
  // every missing chunk is fetched after origin_fallback_ms.
  std::function<std::shared_ptr<const HashRing>()> ring;
  std::string self_id;
  // Set when the agent stops: every job ends at its next poll.
  const std::atomic<bool>* stopping = nullptr;
};

struct PullRequest {
  std::string ref;    // ns/name[:tag-or-version]
  std::string token;  // the caller's; must allow reading the namespace
  // If set, `ref` names only the model: the newest version carrying every
  // label ("key=value") is pulled.
  std::vector<std::string> labels;
  // Where to write, or null to take the version into the cache only
  // (`shoal warm --nodes`), which then must fit in the cache.
  PullDestination* dest = nullptr;
  std::string dest_label;  // names the destination in logs and errors
  // Set when the caller goes away: the pull ends at its next poll.
  const std::atomic<bool>* cancelled = nullptr;
};

struct SeedResult {
  uint64_t chunks = 0;  // chunks added to the cache
  uint64_t bytes = 0;
};

// Reads version `ref`'s files, opened by the caller through `files`, into
// the store, each chunk verified against the signed manifest, and adds
// their torrents so this agent seeds them. Returns once the tracker has
// answered an announce of each torrent (at most 5 s), so a pull started
// after it hears of this seeder. A file that differs from the manifest
// fails with Corruption.
Result<SeedResult> RunSeed(PullContext& ctx, const std::string& ref, const std::string& token,
                           SeedFiles& files, const std::string& dir_label);

class PullJob {
 public:
  using Progress = std::function<void(const PullState&)>;
  // `ctx` and `req` must outlive the job; `progress` (may be empty) hears
  // each poll.
  PullJob(PullContext& ctx, const PullRequest& req, Progress progress);
  ~PullJob();
  PullJob(const PullJob&) = delete;
  PullJob& operator=(const PullJob&) = delete;

  // Runs the pull to its end. Call once.
  Result<PullResult> Run();

 private:
  using Clock = std::chrono::steady_clock;

  // Steps of Run(), in order.
  Status Resolve();     // the name, with the caller's token
  Status Plan();        // tasks, what the cache holds, torrents, the destination
  Result<bool> Poll();  // one pass; true once every task is complete
  PullResult Finish();

  // Parts of Poll().
  Status Interrupted() const;  // Unavailable if the caller or the agent stops it
  // Connects to the tracker (any of a fleet) in place of the current
  // connection; on failure notes the time in tracker_lost_.
  bool ConnectTracker();
  void ReconnectTracker();
  // After a call to the tracker failed with `why`: connects to another
  // tracker of the fleet now. False with one tracker, or none answering.
  bool FailOver(const Status& why);
  // Polls task `i`'s torrent; false if it could not be read this pass.
  Result<bool> PollTask(size_t i, bool& all_done);
  // Acts on each piece of task `i` no connected peer offers.
  Status PursueMissing(size_t i, const TorrentEngine::FileProgress& prog);
  // What to do about piece `p` of task `i`, missing since `since`.
  void Decide(size_t i, uint64_t p, Clock::time_point since, bool alone, Clock::time_point now);
  Status AskTracker();         // the chunks Decide() queued for the tracker
  Status TakeOriginFetches();  // this pull's own origin fetches that finished
  Status CheckStall();
  Status CheckSpace();  // NoSpace once no eviction can make room (see above)

  // Constant after construction.
  PullContext& ctx_;
  const PullRequest& req_;
  const Progress progress_;
  const MissingChunkPolicy policy_;
  const Clock::time_point start_;
  const bool cache_only_;

  // Set by Resolve() and Plan().
  std::optional<ModelRef> ref_;
  VersionId version_;
  VersionState version_state_ = VersionState::kDurable;  // as resolved
  Manifest manifest_;
  std::vector<PullTask> tasks_;
  uint64_t unique_bytes_ = 0;  // the tasks' distinct bytes
  uint64_t total_chunks_ = 0;
  std::unique_ptr<DestinationWriter> writer_;          // null when into the cache only
  std::unique_ptr<OriginFetches> fetches_;             // null without an origin
  std::unique_ptr<OriginLedger::Watch> origin_watch_;  // the chunks the cache lacked

  // Chunks no peer offered go to the tracker while it answers; `tracker_` is
  // null while it does not, and the local rule applies.
  std::unique_ptr<TrackerClient> tracker_;
  Clock::time_point tracker_lost_;

  // The pull's progress.
  PullResult result_;
  PullState state_;
  uint64_t start_have_ = 0;
  uint64_t last_have_ = ~0ull;
  Clock::time_point last_change_;
  double fetch_ms_ewma_ = 0;  // how long an origin fetch takes here
  // This pass's ring, local takeover timeout, and chunks for the tracker
  // as (task, piece) in file order.
  std::shared_ptr<const HashRing> ring_;
  int64_t takeover_ms_ = 0;
  std::vector<std::pair<size_t, uint64_t>> ask_;
};

// Runs a PullJob.
Result<PullResult> RunPull(PullContext& ctx, const PullRequest& req,
                           const std::function<void(const PullState&)>& progress);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_PULL_JOB_H_
