// The Registry Cap'n Proto service (manifests, tags, uploads, GC, warm and
// need), scoped to one verified token. Gateway.authenticate hands one out.
#ifndef SHOAL_TRACKER_REGISTRY_SERVICE_H_
#define SHOAL_TRACKER_REGISTRY_SERVICE_H_

#include <kj/timer.h>

#include <string>

#include "scheduler/fetch_requests.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/status.h"
#include "shoal/token.h"

namespace shoal {
class ManifestSigner;
class Origin;
}  // namespace shoal

namespace shoal::tracker {

class BlockingPool;
class ChangeSignal;
class RegistryStore;
class TokenVerifier;
class TorrentIndex;
class UploadLeases;
struct TrackerMetrics;
struct TrackerOptions;

// What a Registry touches. Every reference must outlive every Registry
// capability (they outlive the RPC listener).
struct RegistryDeps {
  const TrackerOptions& options;  // upload and publish leases, retention, GC grace, origin HEADs
  const TokenVerifier& tokens;    // every call checks the token is still valid
  RegistryStore& store;
  UploadLeases& leases;
  TrackerMetrics& metrics;
  BlockingPool& pool;            // origin checks and GC run here, off the RPC thread
  const ManifestSigner& signer;  // signs committed versions
  TorrentIndex& torrents;        // a committed version's files may be announced
  Origin& origin;
  WarmDeps warm;          // need and warm
  ChangeSignal& changes;  // bumped by every registry write: wakes watch
};

// The Registry for a caller holding `claims` (verified, not expired, not
// revoked), on the connection's loop, whose `timer` ends a watch's wait.
// Every call checks the claims again: an expiry or revocation in the
// meantime refuses the call (Unauthenticated).
kj::Own<proto::Registry::Server> NewRegistry(const RegistryDeps& deps, TokenClaims claims,
                                             kj::Timer& timer);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_SERVICE_H_
