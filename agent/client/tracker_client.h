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
  bool created = false;
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

  // `upload_id` names the publish (Registry.planUpload); empty: this
  // connection's own.
  Result<UploadPlan> PlanUpload(const std::string& ns, const std::vector<ChunkId>& chunks,
                                const std::string& upload_id = "");
  Status ChunksStored(const std::string& ns, const std::vector<ChunkId>& chunks);
  Result<SignedVersion> Commit(const std::string& manifest_bytes,
                               const std::vector<std::string>& tags);
  // Resolves a tag or version (prefix) and checks the signature.
  Result<SignedVersion> Resolve(const std::string& ns, const std::string& name,
                                const std::string& ref);
  // Every page of models (of every namespace if `ns` is empty), and of
  // ns/name's versions newest first. IDs of the wrong size are an error.
  Result<std::vector<ModelInfo>> ListModels(const std::string& ns);
  Result<std::vector<VersionInfo>> ListVersions(const std::string& ns, const std::string& name);
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
