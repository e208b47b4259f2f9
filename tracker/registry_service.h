// The tracker's Cap'n Proto services: Gateway (the front door) and Registry
// (manifests, tags, uploads, GC), scoped to one verified token.
#ifndef SHOAL_TRACKER_REGISTRY_SERVICE_H_
#define SHOAL_TRACKER_REGISTRY_SERVICE_H_

#include <kj/function.h>

#include "shoal/proto/tracker.capnp.h"
#include "tracker_context.h"

namespace shoal::tracker {

// The capability a new RPC connection from `peer_address` (its IP)
// receives. `ctx` must outlive it. `on_authenticated` runs each time
// authenticate or registerAgent accepts a token, on the RPC thread; the
// listener raises the connection's limits then.
kj::Own<proto::Gateway::Server> NewGateway(TrackerContext& ctx, const std::string& peer_address,
                                           kj::Function<void()> on_authenticated);

// Tag names: [A-Za-z0-9._-], 1 to 128 bytes, and not 8 or more hex digits
// alone (those name versions).
Status ValidateTag(const std::string& tag);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_SERVICE_H_
