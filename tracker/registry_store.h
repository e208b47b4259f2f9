// RegistryStore: the tracker's durable state in LevelDB.
//
// Holds versions (signed manifests), tags and their history, the index of
// chunks the origin holds, and the audit log. Every multi-key change is one
// atomic LevelDB write batch, synced, so a killed tracker loses nothing it
// acknowledged.
//
// Key layout (ns and names are [a-z0-9._-], so '|' never appears in them):
//   M|ns|name                     model marker
//   V|ns|name|<version hex>       SignedManifest (flat Cap'n Proto) + meta
//   S|ns|name|<created ms>|<hex>  VersionSummary, ordered by time
//   T|ns|name|tag                 version hex
//   H|ns|name|tag|<seq>           TagEvent
//   C|<chunk hex>                 chunk is in the origin: size, when
//   A|<seq>                       AuditRecord
//   R|<seq>                       Revocation (shoal/token_revocations.h)
//
// Thread-safety: safe for concurrent use; writes are serialised by mu_.
#ifndef SHOAL_TRACKER_REGISTRY_STORE_H_
#define SHOAL_TRACKER_REGISTRY_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/registry_records.h"
#include "shoal/status.h"
#include "shoal/token_revocations.h"
#include "shoal/version_id.h"

namespace leveldb {
class DB;
class WriteBatch;
}  // namespace leveldb

namespace shoal::tracker {

struct StoredVersion {
  VersionId id;
  std::string manifest_bytes;  // canonical
  std::string signature;       // Ed25519 over id
  std::string signer_key_id;
  int64_t created_at_ms = 0;
};

struct AuditEntry {
  uint64_t seq = 0;
  int64_t at_ms = 0;
  std::string subject, token_id, action, target, detail;
};

class RegistryStore {
 public:
  // Opens or creates the store in `dir` (a LevelDB folder).
  static Result<std::unique_ptr<RegistryStore>> Open(const std::string& dir);
  ~RegistryStore();
  RegistryStore(const RegistryStore&) = delete;
  RegistryStore& operator=(const RegistryStore&) = delete;

  // Stores a version and moves `tags` to it, in one batch with their history
  // and the audit record. Returns false if the version already existed (the
  // tags still move).
  Result<bool> CommitVersion(const Manifest& m, const StoredVersion& v,
                             const std::vector<std::string>& tags, const AuditEntry& audit);

  Result<StoredVersion> GetVersion(const std::string& ns, const std::string& name,
                                   const VersionId& id);
  // A full ID or a unique hex prefix of at least 8 digits.
  Result<VersionId> ResolveVersionPrefix(const std::string& ns, const std::string& name,
                                         const std::string& prefix);
  // Versions newest first, each with the tags on it now; `after` is the
  // `next` token of the previous page.
  Result<std::vector<VersionInfo>> ListVersions(const std::string& ns, const std::string& name,
                                                const std::string& after, uint32_t limit,
                                                std::string* next);
  // Models in name order; empty ns lists every namespace (admin views).
  Result<std::vector<ModelInfo>> ListModels(const std::string& ns, const std::string& after,
                                            uint32_t limit, std::string* next);
  // Removes a version, its summary and any tags on it (recording the tag
  // removals), in one batch.
  Status DeleteVersion(const std::string& ns, const std::string& name, const VersionId& id,
                       const AuditEntry& audit);

  std::optional<VersionId> GetTag(const std::string& ns, const std::string& name,
                                  const std::string& tag);
  std::vector<std::pair<std::string, VersionId>> TagsOf(const std::string& ns,
                                                        const std::string& name);
  Status SetTag(const TagChange& change, const AuditEntry& audit);
  // Every move of the tag, oldest first.
  Result<std::vector<TagChange>> TagHistory(const std::string& ns, const std::string& name,
                                            const std::string& tag);

  // The chunk index: what the origin is known to hold.
  bool HasChunk(const ChunkId& id);
  Status AddChunks(const std::vector<std::pair<ChunkId, uint64_t>>& chunks, int64_t now_ms);
  Status RemoveChunks(const std::vector<ChunkId>& ids);
  // Calls fn(id, size, stored_at_ms) for every indexed chunk.
  void ForEachChunk(const std::function<void(const ChunkId&, uint64_t, int64_t)>& fn);
  // Calls fn(manifest) for every stored version.
  Status ForEachManifest(const std::function<void(const Manifest&)>& fn);

  Status Audit(const AuditEntry& entry);
  std::vector<AuditEntry> AuditLog(uint64_t after_seq, uint32_t limit);

  // Token revocations. AddRevocation numbers `r` (the next seq, set in
  // *r) and stores it with `audit` in one synced batch. They stay behind this
  // interface so that a replicated store can hold them later.
  Status AddRevocation(Revocation* r, const AuditEntry& audit);
  // Every revocation, oldest first.
  Result<std::vector<Revocation>> Revocations();

  uint64_t version_count();

  // OK if LevelDB answers a read; the /healthz probe.
  Status Ping();

 private:
  explicit RegistryStore(leveldb::DB* db);
  uint64_t NextAuditSeq();  // REQUIRES: mu_ held
  // Numbers `audit` and adds it to `batch`. REQUIRES: mu_ held.
  void PutAudit(leveldb::WriteBatch* batch, const AuditEntry& audit);

  std::unique_ptr<leveldb::DB> db_;
  std::mutex mu_;                     // serialises read-modify-write batches
  uint64_t next_audit_seq_ = 1;       // protected by mu_
  uint64_t next_tag_seq_ = 1;         // protected by mu_
  uint64_t next_revocation_seq_ = 1;  // protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_STORE_H_
