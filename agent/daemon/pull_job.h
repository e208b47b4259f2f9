// PullJob: one `shoal pull` on this node, from name to folder.
//
// Resolves the name with the caller's token (so a pod reads only what its
// token allows) and checks the manifest's signature; adds one torrent per
// distinct file; asks the tracker for chunks no peer has offered once the
// swarm has had a moment to form (the tracker has their owners fetch them
// from the origin, paced cluster-wide; see tracker/fetch_scheduler.h), and
// asks again for any still missing. Each chunk is written into the caller's
// files as soon as it is in the cache (DestinationWriter), and from then on
// the cache may evict it: a version larger than the cache still pulls. The
// caller moves the finished folder into place itself.
//
// A pull that gains no byte for `stall_timeout_ms` fails, naming what it
// waits for; one whose caller goes away, or whose agent stops, ends within
// a poll period and releases its pins and threads.
//
// While the tracker cannot be reached, the agent falls back to a local
// rule: a chunk's first owner on the last ring it saw fetches it itself,
// and the k-th in rank takes over after k bounded, adaptive timeouts.
//
// Thread-safety: Run() blocks; run each job on its own thread. The engine,
// store and origin it uses are thread-safe.
#ifndef SHOAL_AGENT_DAEMON_PULL_JOB_H_
#define SHOAL_AGENT_DAEMON_PULL_JOB_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "daemon/agent_options.h"
#include "daemon/caller_files.h"
#include "shoal/chunk_store.h"
#include "shoal/hash_ring.h"
#include "shoal/origin.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

class TorrentEngine;

struct PullState {
  uint64_t total_bytes = 0;
  uint64_t have_bytes = 0;
  uint64_t bytes_from_peers = 0;
  uint64_t bytes_from_origin = 0;
  uint32_t peers = 0;
  uint32_t files_done = 0;
  uint32_t files_total = 0;
};

struct PullResult {
  VersionId version;
  uint64_t total_bytes = 0;
  uint64_t bytes_from_peers = 0;
  uint64_t bytes_from_origin = 0;
  uint64_t bytes_cached = 0;
  double seconds = 0;
  double first_chunk_seconds = -1;  // when the first missing chunk arrived; -1 if none was missing
  uint32_t file_count = 0;
};

// Node-wide counters the pull jobs add to, for /metrics and heartbeats.
struct PullCounters {
  std::atomic<uint64_t> pulls{0}, pull_failures{0}, bytes_from_origin{0}, origin_chunks{0};
  std::atomic<uint64_t> owner_fetches{0};     // origin fetches as the chunk's owner
  std::atomic<uint64_t> takeover_fetches{0};  // origin fetches after the owner did not deliver
  std::atomic<uint64_t> replica_chunks{0};    // chunks copied from the swarm as a later owner
};

struct PullContext {
  const AgentOptions& options;
  ChunkStore& store;
  TorrentEngine& engine;
  Origin* origin;            // null: no origin fallback
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
// their torrents so this agent seeds them. A file that differs from the
// manifest fails with Corruption.
Result<SeedResult> RunSeed(PullContext& ctx, const std::string& ref, const std::string& token,
                           SeedFiles& files, const std::string& dir_label);

Result<PullResult> RunPull(PullContext& ctx, const PullRequest& req,
                           const std::function<void(const PullState&)>& progress);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_PULL_JOB_H_
