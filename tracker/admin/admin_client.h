// AdminClient: what `shoal-tracker token list/revoke --tracker URL` sends
// to a running tracker's HTTP API (token_routes.h), with an admin token.
//
// http:// or https:// (the tracker's --tls-cert), one request per
// connection, with a timeout on the whole exchange. Beast stays inside
// admin_client.cpp.
//
// Thread-safety: a plain function; call it from any thread.
#ifndef SHOAL_TRACKER_ADMIN_CLIENT_H_
#define SHOAL_TRACKER_ADMIN_CLIENT_H_

#include <string>

#include "shoal/status.h"

namespace shoal::tracker {

// Sends `method` `target` (path and query) to the tracker at `url`
// ("http://host:port" or "https://host:port"; for https the certificate
// must chain to a CA in `ca_file`, or to the system's if it is empty, and
// name the host) with "Authorization: Bearer <token>", and returns
// the body of a 2xx answer. Any other answer becomes the Status its HTTP
// status stands for (401 Unauthenticated, 403 PermissionDenied, 400
// InvalidArgument, 404 NotFound, ...) with the tracker's message;
// Unavailable if the tracker cannot be reached within 10 s.
Result<std::string> AdminRequest(const std::string& url, const std::string& ca_file,
                                 const std::string& method, const std::string& target,
                                 const std::string& token);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ADMIN_CLIENT_H_
