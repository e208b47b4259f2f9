// NamespaceMirror: keeps namespaces of another Shoal cluster copied into
// this one, on the upstream's events (shoal-tracker serve --follow).
//
// A thread of its own holds a connection to the upstream tracker. On each
// connection it reads the whole state of the followed namespaces once, then
// long-polls Registry.watch from the position it started at, so a publish
// or tag move upstream is seen within one round trip, and nothing is missed
// across a disconnect (the state is read again after each reconnect).
//
// For each model it hears of, it copies the upstream's newest durable
// version and every tagged one that this registry lacks:
//   1. the signed manifest, its signature checked against the upstream's key
//      (pinned with --follow-key, or as the upstream reports it);
//   2. every chunk this cluster's origin lacks, from the upstream's origin,
//      each checked against its ID (chunk_copy.h) and indexed as it lands;
//   3. only then the version, committed here with this tracker's signature
//      and the upstream's kept beside it.
// Tags move here once the version they name is here: until then a pull of
// the tag gets the version it named before. A model that fails (an origin
// error, a chunk that does not match its ID) is tried again with backoff;
// an upstream that cannot be reached is reconnected to with backoff.
//
// Thread-safety: Start and Stop from one thread; the rest is internal.
#ifndef SHOAL_TRACKER_FEDERATION_NAMESPACE_MIRROR_H_
#define SHOAL_TRACKER_FEDERATION_NAMESPACE_MIRROR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/tracker_options.h"
#include "federation/chunk_copy.h"
#include "shoal/registry_records.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {
class ManifestSigner;
class Origin;
class TrackerClient;
}  // namespace shoal

namespace shoal::tracker {

class RegistryStore;
class TorrentIndex;
struct TrackerMetrics;

// Has each chunk's owner among this cluster's agents fetch the version's
// chunks (as `shoal warm` does); returns once they are queued.
using WarmVersion = std::function<void(const std::string& ns, const std::string& name,
                                       const VersionId& id, const std::vector<ChunkId>& chunks)>;

// What the mirror touches. Every reference must outlive it.
struct MirrorDeps {
  const FollowOptions& options;
  RegistryStore& store;
  Origin& origin;           // this cluster's
  Origin& upstream_origin;  // the upstream's, read for chunks
  const ManifestSigner& signer;
  TorrentIndex& torrents;  // a copied version's files may be announced here
  TrackerMetrics& metrics;
  WarmVersion warm;  // with options.warm: called for each version copied
};

class NamespaceMirror {
 public:
  explicit NamespaceMirror(const MirrorDeps& d);
  ~NamespaceMirror();  // Stop()
  NamespaceMirror(const NamespaceMirror&) = delete;
  NamespaceMirror& operator=(const NamespaceMirror&) = delete;

  void Start();
  // Asks the thread to end: within the watch's wait (options.wait_ms), or
  // once the chunks in flight have landed. finished() says when it has.
  void RequestStop();
  bool finished() const { return finished_; }
  // RequestStop, then waits for the thread.
  void Stop();

 private:
  using Model = std::pair<std::string, std::string>;  // namespace, name

  struct Retry {
    int64_t at_ms = 0;
    int64_t backoff_ms = 0;
  };

  // This registry's versions of one model and its tags, read once per
  // reconcile and kept current by it.
  struct LocalModel {
    std::unordered_set<VersionId> versions;
    std::map<std::string, VersionId> tags;
  };

  void Run();
  // One connection: the whole state, then watches until a call fails.
  Status Session(bool* connected);
  Status ReconcileAll(TrackerClient& up);
  // Copies what ns/name lacks and moves its tags; a failure is logged,
  // counted and noted for a retry with backoff. A model the upstream names
  // outside the followed namespaces, or by an invalid name, is refused
  // (logged and counted) and not retried.
  void ReconcileModel(TrackerClient& up, const Model& model);
  Result<LocalModel> ReadLocal(const Model& model);
  // Copies version `id` of `model`; the upstream's answer must be that
  // version of that model.
  Status CopyVersion(TrackerClient& up, const Model& model, const VersionId& id);
  // Moves each upstream tag onto its version where that version is here.
  Status MoveTags(const Model& model, const std::vector<VersionInfo>& upstream, LocalModel* here);
  void NoteBehind(const Model& model, std::vector<std::pair<VersionId, int64_t>> behind);
  // Waits up to `ms`; false if the mirror is stopping.
  bool Sleep(int64_t ms);

  const MirrorDeps d_;
  CopyPacer pacer_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::mutex mu_;  // guards the sleep below
  std::condition_variable cv_;
  std::thread thread_;
  // Touched by the mirror's thread alone.
  std::map<Model, Retry> retries_;  // models whose last attempt failed
  std::map<Model, std::vector<std::pair<VersionId, int64_t>>> behind_;  // (version, committed at)
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FEDERATION_NAMESPACE_MIRROR_H_
