// TrackerClient: a synchronous view of the tracker's RPC, for the CLI and
// for the agent's pull jobs.
//
// Owns a kj event loop on the calling thread; every method blocks until the
// tracker answers and returns its error as a Status. Cap'n Proto types stay
// inside tracker_client.cpp.
//
// Thread-safety: use from the thread that called Connect() only.
#ifndef SHOAL_AGENT_CLIENT_TRACKER_CLIENT_H_
#define SHOAL_AGENT_CLIENT_TRACKER_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/manifest_signer.h"
#include "shoal/need_reply.h"
#include "shoal/registry_records.h"
#include "shoal/status.h"
#include "shoal/token.h"
#include "shoal/tracker_endpoint.h"
#include "shoal/version_id.h"

namespace shoal {

struct SignedVersion {
  VersionId id;
  std::string manifest_bytes;
  std::string signature;
  std::string signer_key_id;
  Manifest manifest;  // decoded and validated
  // A version mirrored from another cluster: that cluster's signature, as
  // the mirror kept it (checked here against the key it carries).
  UpstreamSignature upstream;
  bool created = false;
  // From Commit and Resolve: kUploading for a version committed before
  // every chunk was in the origin, while its publisher uploads it (an older
  // tracker says nothing: kDurable).
  VersionState state = VersionState::kDurable;
};

// How Commit treats the version's chunks in the origin (Registry.commit).
struct CommitOptions {
  bool pending = false;    // commit before every chunk is in the origin: the version is
                           // uploading until FinishUpload, and the tags wait for that
  bool tag_early = false;  // pending: move the tags at once instead
};

struct UploadPlan {
  std::vector<ChunkId> upload;
  std::vector<ChunkId> wait;
  uint32_t lease_ms = 0;
};

struct Identity {
  std::string subject;
  Role role = Role::kRead;
  std::vector<std::string> namespaces;
  int64_t expires_at_ms = 0;
};

struct WarmSummary {
  uint32_t owners = 0, chunks = 0, fetched = 0, failed = 0;
  uint64_t bytes = 0;
  uint32_t nodes = 0, nodes_failed = 0;  // nodes named by --nodes, and those whose prefetch failed
};

struct WarmProgress {
  uint32_t chunks_done = 0, chunks = 0, nodes_done = 0, nodes = 0;
};

// One change Watch reports (Registry.watch).
struct ModelEvent {
  uint64_t seq = 0;
  std::string ns, name, action;
  int64_t at_ms = 0;
};

struct WatchReply {
  uint64_t position = 0;  // where the next Watch starts
  std::vector<ModelEvent> events;
};

struct GcSummary {
  uint64_t referenced = 0, unreferenced = 0, young = 0, swept = 0, swept_bytes = 0;
};

class TrackerClient {
 public:
  // Connects to `tracker` (over TLS if it names a CA file) and presents
  // `token`. If `pinned_key_hex` is set, manifests must be signed by that
  // Ed25519 key; otherwise by the key the tracker reports. Given a fleet
  // (several addresses), connects to one at random, trying the others in
  // turn while they cannot be reached.
  static Result<std::unique_ptr<TrackerClient>> Connect(const TrackerEndpoint& tracker,
                                                        const std::string& token,
                                                        const std::string& pinned_key_hex = "");
  ~TrackerClient();
  TrackerClient(const TrackerClient&) = delete;
  TrackerClient& operator=(const TrackerClient&) = delete;

  const Identity& identity() const;
  // The tracker's signing key (32 raw bytes): the pinned one, or the one it
  // reported.
  const std::string& public_key() const;

  // `upload_id` names the publish (Registry.planUpload); empty: this
  // connection's own.
  Result<UploadPlan> PlanUpload(const std::string& ns, const std::vector<ChunkId>& chunks,
                                const std::string& upload_id = "");
  Status ChunksStored(const std::string& ns, const std::vector<ChunkId>& chunks);
  // Registers the version and points `tags` at it: refused unless every
  // chunk is in the origin, or, with options.pending, stored at once in
  // state uploading (see proto/tracker.capnp, Registry.commit). The result's
  // `state` is the version's after the call.
  Result<SignedVersion> Commit(const std::string& manifest_bytes,
                               const std::vector<std::string>& tags,
                               const CommitOptions& options = {});
  // Keeps a pending version uploading: returns the lease in ms (renew well
  // before it runs out), 0 for a version durable already. FailedPrecondition
  // once it failed (its lease lapsed, or an upload failure was reported).
  Result<uint32_t> RenewUpload(const std::string& ns, const std::string& name, const VersionId& id);
  // Ends a pending version's upload. Empty `error`: every chunk is in the
  // origin now; the version becomes durable (kDurable) and its held tags
  // move, or NotFound says how many chunks the origin lacks. Otherwise the
  // upload failed for that reason: the version becomes kFailed and resolves
  // no more. A durable version stays kDurable either way.
  Result<VersionState> FinishUpload(const std::string& ns, const std::string& name,
                                    const VersionId& id, const std::string& error);
  // Resolves a tag or version (prefix) and checks the signature.
  // FailedPrecondition for a version whose upload failed.
  Result<SignedVersion> Resolve(const std::string& ns, const std::string& name,
                                const std::string& ref);
  // Every page of models (of every namespace if `ns` is empty), and of
  // ns/name's versions newest first. IDs of the wrong size are an error.
  Result<std::vector<ModelInfo>> ListModels(const std::string& ns);
  // Newest first. With `labels` ("key=value"), only the versions carrying
  // every one (filtered here too, for a tracker that ignores the filter).
  Result<std::vector<VersionInfo>> ListVersions(const std::string& ns, const std::string& name,
                                                const std::vector<std::string>& labels = {});
  Result<std::optional<VersionId>> SetTag(const std::string& ns, const std::string& name,
                                          const std::string& tag, const VersionId& id);
  Result<std::vector<TagChange>> TagHistory(const std::string& ns, const std::string& name,
                                            const std::string& tag);
  Status DeleteVersion(const std::string& ns, const std::string& name, const VersionId& id,
                       bool force);
  Result<GcSummary> Gc(bool dry_run, int64_t grace_ms);
  // Has each chunk's owner fetch it ahead of time, and the agents `nodes`
  // names (see proto/tracker.capnp) take the whole version; returns when
  // all answered. `progress`, if set, is called as the tracker reports.
  Result<WarmSummary> Warm(const std::string& ns, const std::string& name, const std::string& ref,
                           const std::string& nodes = "",
                           std::function<void(const WarmProgress&)> progress = nullptr);
  // Asks the tracker to have owners fetch these chunks of a version from
  // the origin (chunks no peer offered). Returns at once. A chunk still
  // missing is asked again when MissingChunkPolicy::AskDue says.
  Result<NeedReply> Need(const std::string& ns, const std::string& name, const VersionId& version,
                         const std::vector<ChunkId>& chunks);
  // Changes to versions and tags in `namespaces` after `after`, waiting up
  // to `wait_ms` for one (Registry.watch). `after` 0: the current position,
  // at once.
  Result<WatchReply> Watch(const std::vector<std::string>& namespaces, uint64_t after,
                           uint32_t wait_ms);

 private:
  struct Impl;
  explicit TrackerClient(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<TrackerClient>> ConnectOne(const TrackerEndpoint& tracker,
                                                           const std::string& token,
                                                           const std::string& pinned_key_hex);
  std::unique_ptr<Impl> impl_;
};

// Checks that `bytes` hash to `id`, that `signature` is the tracker's over
// `id`, and decodes the manifest.
Result<Manifest> VerifySignedManifest(const VersionId& id, const std::string& bytes,
                                      const std::string& signature, const std::string& public_key);

}  // namespace shoal

#endif  // SHOAL_AGENT_CLIENT_TRACKER_CLIENT_H_
