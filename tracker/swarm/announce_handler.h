// The BitTorrent HTTP announce endpoint, GET /announce (BEP 3), answering
// in compact form (BEP 23 `peers`, BEP 7 `peers6`).
//
// Query parameters beyond BEP 3: `token` (a Shoal token of any role; agents
// put it in their announce URL) and `zone` (the agent's zone label, used to
// prefer nearby peers). The torrent must be a file of a published version in
// a namespace the token may read (TorrentIndex); numbers must be plain
// digits in range (announce_numbers.h); and a new swarm or peer must fit
// the swarm limits. Anything else gets a bencoded failure. The peer's address is the connection's
// source address; an `ip` parameter is ignored, so nobody can point a swarm at a third party.
#ifndef SHOAL_TRACKER_ANNOUNCE_HANDLER_H_
#define SHOAL_TRACKER_ANNOUNCE_HANDLER_H_

#include <cstdint>
#include <string>

#include "shoal/server/http_message.h"

namespace shoal::tracker {

class SwarmStore;
class TokenVerifier;
class TorrentIndex;
struct TrackerMetrics;

// What an announce touches. Every reference must outlive the HTTP server.
struct AnnounceDeps {
  const TokenVerifier& tokens;  // verifies the `token` parameter
  TorrentIndex& torrents;       // which namespaces may announce a torrent
  SwarmStore& swarm;
  TrackerMetrics& metrics;
  int64_t announce_interval_ms;       // the interval told to a leecher
  int64_t seed_announce_interval_ms;  // ... and to a seeder
};

HttpResponse HandleAnnounce(const AnnounceDeps& d, const HttpRequest& req);

// A bencoded {"failure reason": message} body, as trackers report errors.
std::string BencodeFailure(const std::string& message);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ANNOUNCE_HANDLER_H_
