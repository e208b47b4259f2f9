// FetchOrders: carries out the tracker's fetch orders on this agent, the
// chunks' owner: fetch each chunk from the origin (unless cached), mark it
// owned so it is evicted last, and seed it. Replica orders, to a chunk's
// owners 2..R, take it from the swarm instead, never from the origin,
// connecting first to the owners ranked above this agent, which hold the
// chunk (see owner_peers.h).
//
// Orders name a version and a few chunks; the manifest of each version is
// resolved once (with the agent's own token) and kept for the last few
// versions, with the torrent of each file, so an order costs one origin GET
// and no tracker round trip.
//
// Thread-safety: Run() may be called from many threads at once.
#ifndef SHOAL_AGENT_DAEMON_FETCH_ORDERS_H_
#define SHOAL_AGENT_DAEMON_FETCH_ORDERS_H_

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/pull_job.h"
#include "p2p/file_torrent_id.h"
#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"
#include "shoal/manifest.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

class FetchOrders {
 public:
  // `ctx` must outlive this; `announce_url` gives the current announce URL,
  // `ring` the last ring of owners seen (null before the first) and
  // `self_id` this agent's ID in it ("" before registering).
  FetchOrders(PullContext& ctx, std::function<std::string()> announce_url,
              std::function<std::shared_ptr<const HashRing>()> ring,
              std::function<std::string()> self_id);
  ~FetchOrders();

  // `takeover`: the tracker sent this after an earlier owner did not
  // deliver (counted apart). Unavailable if this agent has no origin.
  Result<SeedResult> Run(const std::string& ns, const std::string& name, const VersionId& version,
                         const std::vector<ChunkId>& chunks, bool takeover);

  // Takes `chunks` from the swarm (top priority, after connecting to the
  // owners ranked above this agent), then holds them as owned and seeds
  // them. Returns the bytes that came from peers. Unavailable
  // if a chunk does not arrive within `wait_ms`.
  Result<uint64_t> Replicate(const std::string& ns, const std::string& name,
                             const VersionId& version, const std::vector<ChunkId>& chunks,
                             int64_t wait_ms);

 private:
  struct Version;
  Result<std::shared_ptr<Version>> Load(const std::string& ns, const std::string& name,
                                        const VersionId& version);
  // The torrent of `f`, added seed-only if the engine lacks it (or dropped it).
  Result<FileTorrentId> Torrent(Version& ver, const FileEntry& f, bool re_add);
  // The torrent that carries piece `piece` of `f`, and the piece's index in
  // it: the small file's bundle in the version (added seed-only once, as
  // pulls fetch small files through it), else the file's own torrent.
  Result<std::pair<FileTorrentId, uint64_t>> Place(Version& ver, const FileEntry& f, uint64_t piece,
                                                   bool re_add);
  // The file and piece `chunk` sits at; InvalidArgument if not in `ver`.
  static Result<std::pair<const FileEntry*, uint64_t>> Locate(const Version& ver,
                                                              const ChunkId& chunk);
  // Tells the file's torrent the piece's chunk is in the store, so peers are
  // offered it; adds the torrent (again) if the engine lacks it.
  Status Seed(Version& ver, const FileEntry& f, uint64_t piece);
  // Before seeding a chunk just read from the origin: serves it only to
  // its next owners for a while (the hand-on), if the options ask.
  void HoldForNextOwners(Version& ver, const FileEntry& f, uint64_t piece, const ChunkId& chunk);
  // Connects torrent `id` to the owners of `chunk` ranked above this agent.
  void ConnectOwners(const FileTorrentId& id, const ChunkId& chunk);

  PullContext& ctx_;
  std::function<std::string()> announce_url_;
  std::function<std::shared_ptr<const HashRing>()> ring_;
  std::function<std::string()> self_id_;
  std::mutex mu_;
  std::list<std::shared_ptr<Version>> versions_;  // newest first; protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_FETCH_ORDERS_H_
