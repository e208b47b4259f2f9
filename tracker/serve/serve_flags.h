// The flags of `shoal-tracker serve`: TrackerOptions, plus the settings
// given as durations ("30s", "12h") and the log level, which
// ApplyServeFlags turns into options and checks.
#ifndef SHOAL_TRACKER_SERVE_FLAGS_H_
#define SHOAL_TRACKER_SERVE_FLAGS_H_

#include <string>

#include "common/tracker_options.h"
#include "federation/follow_flags.h"
#include "shoal/status.h"

namespace CLI {
class App;
}

namespace shoal::tracker {

struct ServeFlags {
  TrackerOptions opts;
  std::string gc_grace = "24h";
  std::string upload_lease = "10m";
  std::string publish_lease = "60s";
  std::string log_level = "info";
  std::string announce_interval = "5s";
  std::string seed_announce_interval = "60s";
  std::string fetch_done_grace = "15s";
  std::string rpc_auth_timeout = "10s";
  std::string rpc_message_timeout = "30s";
  std::string http_header_timeout = "10s";
  std::string http_body_timeout = "60s";
  std::string http_idle_timeout = "30s";
  std::string peer_security;    // tls, auth or off; empty: as --peer-tls says
  std::string peer_tls = "on";  // the older flag: on = tls, off = off
  std::string peer_cert_ttl = "12h";
  FollowFlags follow;
  bool print_config = false;
};

void AddServeFlags(CLI::App* cmd, ServeFlags* f);
// Sets the log level and the options given as durations, then checks the
// options.
Status ApplyServeFlags(ServeFlags& f);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_SERVE_FLAGS_H_
