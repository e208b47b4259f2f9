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
//   GET /v1/tokens                                  issued tokens (token_routes.h)
//   POST /v1/tokens/revoke?id=ID | ?subject=S       revoke tokens (token_routes.h)
//
// A missing, malformed, forged, expired or revoked token gets 401 with
// "WWW-Authenticate: Bearer"; a valid token without the right gets 403.
//   GET /announce                                   BitTorrent announce (announce_handler.h)
#ifndef SHOAL_TRACKER_HTTP_API_H_
#define SHOAL_TRACKER_HTTP_API_H_

#include <string>

#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"
#include "shoal/token.h"
#include "swarm/announce_handler.h"

namespace shoal {
class ManifestSigner;
}  // namespace shoal

namespace shoal::tracker {

class AgentDirectory;
class RegistryStore;
class TokenVerifier;
struct TrackerMetrics;

// What the routes touch. Every reference must outlive the server.
struct HttpApiDeps {
  TokenVerifier& tokens;         // bearer tokens on /v1; /v1/tokens revokes through it
  std::string issued_tokens;     // the issued-tokens journal /v1/tokens lists (issued_tokens.h)
  const ManifestSigner& signer;  // /v1/public-key
  RegistryStore& store;          // /v1/models, /v1/audit, and /healthz's ping
  AgentDirectory& agents;        // /v1/agents
  TrackerMetrics& metrics;       // refused tokens are counted
  AnnounceDeps announce;         // /announce
};

// Declares every route on `server`; /metrics serves `metrics`, which must
// outlive the server. The tracker's own collectors are added separately
// (tracker_collectors.h).
void AddTrackerRoutes(HttpServer& server, MetricsRegistry& metrics, const HttpApiDeps& d);

// The claims of the request's bearer token if it may act on `ns` with
// `role`: Unauthenticated (401) for a missing or invalid token,
// PermissionDenied (403) for one without the right. Refusals are counted.
Result<TokenClaims> AuthorizeRequest(const HttpApiDeps& d, const HttpRequest& req,
                                     const std::string& ns, Role role);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_HTTP_API_H_
