// The tracker's HTTP face: /healthz, /metrics and a read-only JSON view of
// the registry under /v1. Every /v1 route needs a bearer token with read
// access to the namespace it shows.
//
//   GET /v1/public-key                              the manifest signing key
//   GET /v1/models?ns=NS                            models of a namespace
//   GET /v1/models/NS/NAME/versions                 versions, newest first
//   GET /v1/models/NS/NAME/versions/REF/manifest    one manifest (REF: tag or version)
//   GET /v1/models/NS/NAME/tags/TAG/history         every move of a tag
//   GET /v1/agents                                  live agents (all-namespace token)
//   GET /v1/audit?after=SEQ                         the audit log (all-namespace admin)
//   GET /announce                                   BitTorrent announce (announce_handler.h)
#ifndef SHOAL_TRACKER_HTTP_API_H_
#define SHOAL_TRACKER_HTTP_API_H_

#include "shoal/service/http_server.h"
#include "shoal/service/metrics.h"
#include "tracker_context.h"

namespace shoal::tracker {

// Declares every route on `server`. `ctx` and `metrics` must outlive it.
void AddTrackerRoutes(HttpServer& server, MetricsRegistry& metrics, TrackerContext& ctx);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_HTTP_API_H_
