// How tracker_main.cpp wires the parts of a TrackerContext into each
// service's dependencies; shared with the fuzz targets, so they reach the
// services exactly as the daemon does.
#ifndef SHOAL_TRACKER_TRACKER_WIRING_H_
#define SHOAL_TRACKER_TRACKER_WIRING_H_

#include "http/http_api.h"
#include "http/tracker_collectors.h"
#include "rpc/gateway_service.h"
#include "serve/tracker_context.h"
#include "swarm/announce_handler.h"

namespace shoal::tracker {

// What answers an announce, over HTTP or relayed by an agent's session.
AnnounceDeps AnnounceDepsOf(TrackerContext& ctx);
// The parts of the tracker each RPC connection's Gateway reaches.
GatewayDeps GatewayDepsOf(TrackerContext& ctx);
// The parts of the tracker the HTTP routes reach.
HttpApiDeps HttpApiDepsOf(TrackerContext& ctx);
// What /metrics reads at each scrape.
CollectorSources CollectorSourcesOf(TrackerContext& ctx);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TRACKER_WIRING_H_
