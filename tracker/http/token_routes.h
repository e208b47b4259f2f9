// The tracker's token administration over HTTP, for `shoal-tracker token
// list` and `token revoke --tracker URL` while the tracker runs. Both need
// an admin token for every namespace.
//
//   GET  /v1/tokens                       every issued token (issued_tokens.h: the
//                                         journal, and a fleet's registry) with
//                                         whether it is revoked; never a MAC
//   POST /v1/tokens/revoke?id=ID          revoke one token
//   POST /v1/tokens/revoke?subject=S      revoke every token of S issued up to now
//
// A revocation is in force on this tracker when the answer arrives, and
// reaches agents with their next heartbeat. The audit log records the
// admin token's subject as who revoked.
#ifndef SHOAL_TRACKER_TOKEN_ROUTES_H_
#define SHOAL_TRACKER_TOKEN_ROUTES_H_

#include <string>
#include <vector>

#include "shoal/server/http_server.h"
#include "shoal/token.h"
#include "shoal/token_revocations.h"

namespace shoal::tracker {

struct HttpApiDeps;

// Declares the routes above on `server` (they keep a copy of `d`).
void AddTokenRoutes(HttpServer& server, const HttpApiDeps& d);

// The JSON array GET /v1/tokens answers: each of `issued` (a
// proto::IssuedToken) marked with its revocation in `revocations`, if any.
std::string IssuedTokensJson(const std::vector<TokenClaims>& issued,
                             const RevocationList& revocations);

// A proto::Revocation as JSON, as POST /v1/tokens/revoke answers.
std::string RevocationJson(const Revocation& r);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TOKEN_ROUTES_H_
