// The publishing half of the Registry service (registry_service.h): storing
// a commit, durable or pending, and the calls that keep and end a pending
// version's upload.
//
// A pending commit makes a version pullable before it is durable: it is
// stored at once, in state uploading, while its publisher uploads the
// chunks to the origin, renews the upload's lease (the tracker's
// --publish-lease) and finally reports the upload finished or failed. The
// tags it names are held until the version is durable. The store keeps the
// state (RegistryStore::CommitPending and friends); these functions check
// the origin off the event loop, sign, audit and count.
//
// Each function is called on an RPC event loop after the caller's token was
// checked for the write role on the namespace. Work that blocks (origin
// HEADs, the commit's archive copy) runs on the blocking pool; the promises
// resolve on the calling loop.
#ifndef SHOAL_TRACKER_REGISTRY_PUBLISH_H_
#define SHOAL_TRACKER_REGISTRY_PUBLISH_H_

#include <kj/async.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "registry/registry_store.h"
#include "rpc/registry_service.h"
#include "shoal/manifest.h"
#include "shoal/need_reply.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal::tracker {

// One Registry.commit, its manifest validated and its tags checked.
struct CommitRequest {
  std::shared_ptr<const Manifest> manifest;
  std::shared_ptr<const std::string> bytes;  // the manifest's canonical bytes
  std::shared_ptr<const std::vector<std::string>> tags;
  bool pending = false;    // the origin may lack chunks yet: store the version uploading
  bool tag_early = false;  // pending: move the tags now, not once it is durable
};

// A commit stored: the version as signed, and what the store made of it.
struct CommitDone {
  StoredVersion version;
  CommitOutcome outcome;
};

// Checks that every chunk is in the origin (not for a pending commit), then
// signs the version and stores it with `audit` (who and when: its action,
// target and detail are set here). A refusal for missing chunks is counted
// in publish_rejected.
kj::Promise<Result<CommitDone>> StoreCommit(const RegistryDeps& d, const CommitRequest& request,
                                            AuditEntry audit);

// Registry.renewUpload: extends an uploading version's lease by the
// tracker's publish lease and returns that lease in ms; 0 for a durable
// version. FailedPrecondition for a failed (or lapsed) one, naming why.
Result<uint32_t> RenewVersionUpload(const RegistryDeps& d, const std::string& ns,
                                    const std::string& name, const VersionId& id);

// Registry.finishUpload. Empty `error`: checks every chunk is in the origin
// (NotFound naming how many are not), then makes the version durable and
// moves its held tags; kDurable at once for a version durable already;
// FailedPrecondition for a failed one. Otherwise marks the version failed
// with `error` (made one line, at most 512 bytes) as the reason; a durable
// version stays durable. `audit` says who and when.
kj::Promise<Result<VersionState>> FinishVersionUpload(const RegistryDeps& d, const std::string& ns,
                                                      const std::string& name, const VersionId& id,
                                                      const std::string& error, AuditEntry audit);

// Registry.need for a version not yet durable. Its chunks may be missing
// from the origin, and its publisher's agent seeds them, so an uploading
// version's chunks are answered `pending` without ordering any fetch: the
// puller waits for that peer. A failed version's chunks are all `failed`,
// with the reason it failed. Nothing (std::nullopt) for a durable version,
// or one the store cannot read: the usual answer applies.
std::optional<NeedReply> NeedBeforeDurable(const RegistryDeps& d, const std::string& ns,
                                           const std::string& name, const VersionId& id,
                                           const std::vector<ChunkId>& chunks);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_PUBLISH_H_
