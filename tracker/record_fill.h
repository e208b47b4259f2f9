// Registry records into their Cap'n Proto form: one filler per record, used
// by the store (LevelDB values), the RPC service and the HTTP JSON view.
#ifndef SHOAL_TRACKER_RECORD_FILL_H_
#define SHOAL_TRACKER_RECORD_FILL_H_

#include <string>
#include <utility>
#include <vector>

#include "registry_store.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/token.h"

namespace shoal::tracker {

// `tags` are the tags that point at v now (none for the stored summary).
void FillVersionSummary(const VersionInfo& v, const std::vector<std::string>& tags,
                        proto::VersionSummary::Builder out);
// The tags among `all` (tag, version) that point at `id`.
std::vector<std::string> TagsOn(const VersionId& id,
                                const std::vector<std::pair<std::string, VersionId>>& all);
void FillModelSummary(const ModelInfo& m, proto::ModelSummary::Builder out);
void FillTagEvent(const TagChange& e, proto::TagEvent::Builder out);
void FillAuditRecord(const AuditEntry& a, proto::AuditRecord::Builder out);
// A stored version with its signature, as resolve and commit return it.
void FillSigned(const StoredVersion& v, proto::SignedManifest::Builder out);
// Who a verified token speaks for.
void FillIdentity(const TokenClaims& c, proto::Identity::Builder out);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RECORD_FILL_H_
