// The tracker's Cap'n Proto services: Gateway (the front door) and Registry
// (manifests, tags, uploads, GC), scoped to one verified token.
#ifndef SHOAL_TRACKER_REGISTRY_SERVICE_H_
#define SHOAL_TRACKER_REGISTRY_SERVICE_H_

#include "shoal/proto/tracker.capnp.h"
#include "tracker_context.h"

namespace shoal::tracker {

// The capability a new RPC connection from `peer_address` (its IP)
// receives. `ctx` must outlive it.
kj::Own<proto::Gateway::Server> NewGateway(TrackerContext& ctx, const std::string& peer_address);

// Tag names: [A-Za-z0-9._-], 1 to 128 bytes, and not 8 or more hex digits
// alone (those name versions).
Status ValidateTag(const std::string& tag);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_SERVICE_H_
