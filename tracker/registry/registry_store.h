// RegistryStore: the tracker's durable state, over an ordered key-value
// engine (kv_store.h): LevelDB for one tracker, etcd for a fleet.
//
// Holds versions (signed manifests) and the state of their upload to the
// origin, tags and their history, the index of chunks the origin holds,
// the audit log and token revocations; for a fleet, also upload leases and
// the claims of tokens minted for it. Every
// multi-key change is one atomic KvBatch, so a killed tracker loses nothing
// it acknowledged and a reader never sees half a change. Several trackers
// may share one engine: each write is guarded on what it read (a version
// not yet there, a tag's old target, the next free sequence number) and is
// rebuilt and retried when another writer got there first.
//
// A ManifestArchive, when given, keeps a copy of every signed manifest in
// the origin beside the chunks; a manifest too big for the engine's values
// lives only there, and the V| record keeps its signature.
//
// Key layout (ns and names are [a-z0-9._-], so '|' never appears in them):
//   M|ns|name                     model marker
//   V|ns|name|<version hex>       SignedManifest (flat Cap'n Proto) + meta
//   S|ns|name|<created ms>|<hex>  VersionSummary, ordered by time
//   T|ns|name|tag                 version hex
//   U|ns|name|<version hex>       PendingUpload: a version not yet durable
//   H|ns|name|tag|<seq>           TagEvent
//   C|<chunk hex>                 chunk is in the origin: size, when
//   L|<chunk hex>                 upload lease: expiry ms, holder (fleets only)
//   I|<token id>                  claims of a token minted for a fleet
//   A|<seq>                       AuditRecord
//   R|<seq>                       Revocation (shoal/token_revocations.h)
//   F|<seq>                       FeedEntry: a version committed or deleted
//   N|<prefix>                    the last <seq> used under A|, R|, F|, H|...
//
// The F| feed lets each tracker of a fleet follow what the others commit
// (registry_follower.h); it is written in the same batch as the change.
//
// A version committed before every chunk is in the origin (CommitPending)
// has a U| record until it is durable: it is uploading while its publisher
// renews the lease, and failed once the publisher reports a failure or lets
// the lease lapse. Its tags are held in the record and move when it becomes
// durable (FinishUpload, or a CommitVersion of it). Nothing sweeps lapsed
// records: a lapse is worked out whenever the record is read.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_REGISTRY_STORE_H_
#define SHOAL_TRACKER_REGISTRY_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "kv/kv_store.h"
#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/manifest_signer.h"
#include "shoal/registry_records.h"
#include "shoal/status.h"
#include "shoal/token.h"
#include "shoal/token_revocations.h"
#include "shoal/version_id.h"

namespace shoal::tracker {

struct StoredVersion {
  VersionId id;
  std::string manifest_bytes;  // canonical
  std::string signature;       // Ed25519 over id
  std::string signer_key_id;
  int64_t created_at_ms = 0;
  UpstreamSignature upstream;  // a mirrored version: the upstream's signature too
};

// One change to the set of versions, in the order the registry took them.
struct FeedEntry {
  uint64_t seq = 0;
  bool deleted = false;  // false: committed
  std::string ns, name;
  VersionId id;
};

struct AuditEntry {
  uint64_t seq = 0;
  int64_t at_ms = 0;
  std::string subject, token_id, action, target, detail;
};

// A version's upload to the origin: its U| record, if it has one.
struct VersionUpload {
  VersionState state = VersionState::kDurable;  // kDurable: no U| record
  int64_t lease_until_ms = 0;                   // uploading: failed after this unless renewed
  std::vector<std::string> held_tags;           // moved to the version once it is durable
  std::string publisher;                        // subject of the commit that started the upload
  int64_t started_at_ms = 0;                    // when that commit was made
  std::string detail;                           // failed: why

  // This upload as of now_ms: one whose lease lapsed is failed, with a
  // detail saying when its publisher stopped renewing it.
  VersionUpload At(int64_t now_ms) const;
  // VersionInfo::state_detail: who uploads it since when, or why it failed;
  // empty when durable.
  std::string Describe() const;
};

// The error for resolving (or renewing, or finishing) a failed version:
// FailedPrecondition, one line naming it and why it failed.
Status FailedVersionError(const std::string& ns, const std::string& name, const VersionId& id,
                          const std::string& detail);

struct CommitOutcome {
  bool created = false;                         // false: the version was stored already
  VersionState state = VersionState::kDurable;  // the version's, after the commit
};

class ChangeSignal;

// Tag names: [A-Za-z0-9._-], 1 to 128 bytes, and not 8 or more hex digits
// alone (those name versions). Checked on every tag a client names, and on
// every tag a mirror takes from its upstream.
Status ValidateTag(const std::string& tag);

class ManifestArchive;

class RegistryStore {
 public:
  // The registry in `kv`; `archive` (may be null; it must outlive the
  // store) gets a copy of every manifest committed.
  RegistryStore(std::unique_ptr<KvStore> kv, ManifestArchive* archive)
      : kv_owner_(std::move(kv)), kv_(*kv_owner_), archive_(archive) {}
  // The registry in the LevelDB folder `dir`, without an archive: for
  // tools that work on a stopped tracker's folder.
  static Result<std::unique_ptr<RegistryStore>> Open(const std::string& dir);
  ~RegistryStore();
  RegistryStore(const RegistryStore&) = delete;
  RegistryStore& operator=(const RegistryStore&) = delete;

  // Stores a version and moves `tags` to it, in one batch with their history
  // and the audit record. Returns false if the version already existed (the
  // tags still move). The version is durable: the caller checked that every
  // chunk is in the origin. So a U| record it has goes in the same batch,
  // and the tags it held move too.
  Result<bool> CommitVersion(const Manifest& m, const StoredVersion& v,
                             const std::vector<std::string>& tags, const AuditEntry& audit);
  // Stores a version that may lack chunks in the origin yet, in state
  // uploading until lease_until_ms, with its U| record in the same batch as
  // CommitVersion's writes. `tags` are held in the record, to move once it
  // is durable, unless `tag_early`: then they move now. A version stored
  // already and still uploading or failed is taken over (uploading again
  // until lease_until_ms, by audit.subject since audit.at_ms, holding these
  // tags); a durable one stays durable and its tags move now.
  Result<CommitOutcome> CommitPending(const Manifest& m, const StoredVersion& v,
                                      const std::vector<std::string>& tags, const AuditEntry& audit,
                                      bool tag_early, int64_t lease_until_ms);

  // The upload of version `id` as of now_ms (VersionUpload::At); kDurable
  // without a U| record, whether or not the version exists: one read, for
  // callers that found the version already.
  Result<VersionUpload> UploadOf(const std::string& ns, const std::string& name,
                                 const VersionId& id, int64_t now_ms);
  // Moves the lease of an uploading version to lease_until_ms and returns
  // kUploading; kDurable for a durable version (nothing to renew).
  // FailedPrecondition (FailedVersionError) if it failed by now_ms;
  // NotFound if it does not exist.
  Result<VersionState> RenewUpload(const std::string& ns, const std::string& name,
                                   const VersionId& id, int64_t now_ms, int64_t lease_until_ms);
  // Makes an uploading version durable: deletes its U| record and moves its
  // held tags to it (with their history, by audit.subject at audit.at_ms),
  // with `audit`, in one batch. kDurable, writing nothing, for a version
  // durable already. FailedPrecondition if it failed by now_ms; NotFound if
  // it does not exist.
  // REQUIRES: every chunk of the version is in the origin.
  Result<VersionState> FinishUpload(const std::string& ns, const std::string& name,
                                    const VersionId& id, int64_t now_ms, const AuditEntry& audit);
  // Marks an uploading or failed version failed because of `detail`, with
  // `audit`, and returns kFailed. A durable version stays durable: kDurable,
  // nothing written. NotFound if it does not exist.
  Result<VersionState> FailUpload(const std::string& ns, const std::string& name,
                                  const VersionId& id, const std::string& detail,
                                  const AuditEntry& audit);

  Result<StoredVersion> GetVersion(const std::string& ns, const std::string& name,
                                   const VersionId& id);
  // A full ID or a unique hex prefix of at least 8 digits.
  Result<VersionId> ResolveVersionPrefix(const std::string& ns, const std::string& name,
                                         const std::string& prefix);
  // Versions newest first, each with the tags on it now and its upload's
  // state as of now; `after` is the `next` token of the previous page. With
  // `labels` ("key=value"), only the versions that carry every one.
  Result<std::vector<VersionInfo>> ListVersions(const std::string& ns, const std::string& name,
                                                const std::string& after, uint32_t limit,
                                                std::string* next,
                                                const std::vector<std::string>& labels = {});
  // Models in name order; empty ns lists every namespace (admin views).
  Result<std::vector<ModelInfo>> ListModels(const std::string& ns, const std::string& after,
                                            uint32_t limit, std::string* next);
  // Removes a version, its summary, its U| record and any tags on it
  // (recording the tag removals), in one batch.
  Status DeleteVersion(const std::string& ns, const std::string& name, const VersionId& id,
                       const AuditEntry& audit);

  Result<std::optional<VersionId>> GetTag(const std::string& ns, const std::string& name,
                                          const std::string& tag);
  Result<std::vector<std::pair<std::string, VersionId>>> TagsOf(const std::string& ns,
                                                                const std::string& name);
  // Moves the tag as `change` says (its `from` is ignored: the tag's target
  // when the change applies is recorded) and returns that previous target.
  Result<std::optional<VersionId>> SetTag(const TagChange& change, const AuditEntry& audit);
  // Every move of the tag, oldest first.
  Result<std::vector<TagChange>> TagHistory(const std::string& ns, const std::string& name,
                                            const std::string& tag);

  // The chunk index: what the origin is known to hold.
  Result<bool> HasChunk(const ChunkId& id);
  Status AddChunks(const std::vector<std::pair<ChunkId, uint64_t>>& chunks, int64_t now_ms);
  Status RemoveChunks(const std::vector<ChunkId>& ids);
  // Calls fn(id, size, stored_at_ms) for every indexed chunk.
  Status ForEachChunk(const std::function<void(const ChunkId&, uint64_t, int64_t)>& fn);
  // Upload leases, shared by every tracker on this registry (a fleet's
  // publishes; upload_leases.h says why). ClaimUploads gives `holder` each
  // of `ids` that is free, expired or already its own, until now_ms +
  // ttl_ms, and answers per id whether `holder` holds it now. It reads the
  // leases with a Get per id for a few ids, else one paged scan of every
  // lease, then writes claims in batches guarded on what it read; a batch
  // another writer raced is split down to single chunks, each read again.
  // REQUIRES: ids are distinct.
  Result<std::vector<bool>> ClaimUploads(const std::vector<ChunkId>& ids, const std::string& holder,
                                         int64_t now_ms, int64_t ttl_ms);
  // Deletes the leases on `ids`, whoever holds them: callers release chunks
  // the index holds now, which nobody uploads again.
  Status ReleaseUploads(const std::vector<ChunkId>& ids);
  // Every chunk under an unexpired lease. With `drop_expired`, deletes the
  // expired leases it reads (each guarded on its value, so a claim made
  // meanwhile stays).
  Result<std::unordered_set<ChunkId>> LeasedUploads(int64_t now_ms, bool drop_expired);

  // Tokens minted for a fleet (issued_tokens.h): their claims, by id.
  Status AddIssuedToken(const TokenClaims& claims);
  Result<std::vector<TokenClaims>> IssuedTokens();

  // Calls fn(id, manifest) for every stored version.
  Status ForEachManifest(const std::function<void(const VersionId&, const Manifest&)>& fn);

  // The feed of versions committed and deleted: entries after `after_seq`,
  // oldest first, at most `limit`; and the seq of the newest entry (0 for
  // none).
  Result<std::vector<FeedEntry>> FeedAfter(uint64_t after_seq, uint32_t limit);
  Result<uint64_t> FeedEnd();
  // The last audit entry's sequence number (0 for none): where a watch
  // starts (Registry.watch).
  Result<uint64_t> AuditEnd();
  // `signal`, if set, is bumped after every write this store makes, so
  // watches wake at once. It must outlive the store.
  void SetChangeSignal(ChangeSignal* signal) { changes_ = signal; }

  Status Audit(const AuditEntry& entry);
  Result<std::vector<AuditEntry>> AuditLog(uint64_t after_seq, uint32_t limit);

  // Token revocations. AddRevocation numbers `r` (the next seq, set in
  // *r) and stores it with `audit` in one batch.
  Status AddRevocation(Revocation* r, const AuditEntry& audit);
  // Every revocation after `after_seq`, oldest first.
  Result<std::vector<Revocation>> Revocations(uint64_t after_seq = 0);

  Result<uint64_t> VersionCount();

  // OK if the engine answers a read; the /healthz probe.
  Status Ping() { return kv_.Ping(); }
  std::string Describe() const { return kv_.Describe(); }

 private:
  // Builds a batch with `build` and applies it; when a guard fails (another
  // writer), builds it again from fresh reads, a few times. `build` may
  // leave the batch empty to write nothing.
  Status Write(const std::string& what, const std::function<Status(KvBatch*)>& build);
  // The last sequence number under `prefix` (0: none yet).
  Result<uint64_t> LastSeq(const std::string& prefix);
  // The next sequence number under `prefix`; adds its counter's move,
  // guarded on the counter's old value, to `batch`.
  Result<uint64_t> NextSeq(const std::string& prefix, KvBatch* batch);
  // Numbers `audit` and adds it to `batch`.
  Status PutAudit(KvBatch* batch, const AuditEntry& audit);
  // Adds the feed entry for a version committed or deleted to `batch`.
  Status PutFeed(KvBatch* batch, bool deleted, const std::string& ns, const std::string& name,
                 const VersionId& id);
  Result<std::string> EncodeForKv(const StoredVersion& v) const;
  // Copies a version the registry does not hold yet to the archive: once
  // the registry names a version, every tracker can read its manifest.
  Status ArchiveIfNew(const Manifest& m, const StoredVersion& v);
  // Adds the writes of a version not stored yet (V|, S|, M| and its feed
  // entry) to `batch`, guarded on its absence; *created says if it was.
  Status PutVersion(KvBatch* batch, const Manifest& m, const StoredVersion& v, bool* created);
  // Adds the moves of `tags` to `id` to `batch`, each guarded on the tag's
  // current target and recorded in its history as by `by` at `at_ms`; a
  // tag on `id` already stays as it is.
  Status PutTagMoves(KvBatch* batch, const std::string& ns, const std::string& name,
                     const VersionId& id, std::vector<std::string> tags, const std::string& by,
                     int64_t at_ms);
  // Adds the removal of every tag on `id` to `batch`, recorded likewise.
  Status PutTagRemovals(KvBatch* batch, const std::string& ns, const std::string& name,
                        const VersionId& id, const std::string& by, int64_t at_ms);
  // The U| record of `id` (nullopt: none), as stored; a record read gets a
  // guard on its value in `batch` (which may be null for a plain read). An
  // absent one needs none: see registry_upload_state.cpp.
  Result<std::optional<VersionUpload>> GuardUpload(KvBatch* batch, const std::string& ns,
                                                   const std::string& name, const VersionId& id);
  // For a version made durable: deletes its U| record, if any, in `batch`
  // and appends the tags it held to *tags.
  Status ClearUpload(KvBatch* batch, const std::string& ns, const std::string& name,
                     const VersionId& id, std::vector<std::string>* tags);
  // Sets the state of each of `versions` (all of ns/name) from its U| record.
  Status AddUploadStates(const std::string& ns, const std::string& name, int64_t now_ms,
                         std::vector<VersionInfo>* versions);

  const std::unique_ptr<KvStore> kv_owner_;
  KvStore& kv_;
  ManifestArchive* const archive_;
  ChangeSignal* changes_ = nullptr;
  std::mutex mu_;  // one local writer at a time: fewer guard retries
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_STORE_H_
