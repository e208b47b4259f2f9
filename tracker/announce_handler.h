// The BitTorrent HTTP announce endpoint, GET /announce (BEP 3), answering
// in compact form (BEP 23 `peers`, BEP 7 `peers6`).
//
// Query parameters beyond BEP 3: `token` (a Shoal token of any role; agents
// put it in their announce URL) and `zone` (the agent's zone label, used to
// prefer nearby peers). The torrent must be a file of a published version in
// a namespace the token may read (TorrentIndex); numbers must be plain
// digits in range (announce_numbers.h); and a new swarm or peer must fit
// the swarm limits. Anything else gets a bencoded failure. The peer's address is the connection's source
// address; an `ip` parameter is ignored, so nobody can point a swarm at a
// third party.
#ifndef SHOAL_TRACKER_ANNOUNCE_HANDLER_H_
#define SHOAL_TRACKER_ANNOUNCE_HANDLER_H_

#include <string>

#include "shoal/service/http_message.h"
#include "swarm_store.h"
#include "tracker_context.h"

namespace shoal::tracker {

HttpResponse HandleAnnounce(TrackerContext& ctx, SwarmStore& swarm, const HttpRequest& req);

// A bencoded {"failure reason": message} body, as trackers report errors.
std::string BencodeFailure(const std::string& message);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ANNOUNCE_HANDLER_H_
