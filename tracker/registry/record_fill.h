// The tracker's own records into their Cap'n Proto form, for the store
// (LevelDB values) and the RPC service. The records clients read too
// (versions, models, tag moves) are in proto/record_codec.h.
#ifndef SHOAL_TRACKER_RECORD_FILL_H_
#define SHOAL_TRACKER_RECORD_FILL_H_

#include "registry/registry_store.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/token.h"

namespace shoal::tracker {

void FillAuditRecord(const AuditEntry& a, proto::AuditRecord::Builder out);
// A stored version with its signature, as resolve and commit return it.
void FillSigned(const StoredVersion& v, proto::SignedManifest::Builder out);
// Who a verified token speaks for.
void FillIdentity(const TokenClaims& c, proto::Identity::Builder out);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RECORD_FILL_H_
