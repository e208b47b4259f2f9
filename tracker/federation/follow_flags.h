// The flags of `shoal-tracker serve` that make it mirror namespaces of
// another cluster (FollowOptions), and their checks.
#ifndef SHOAL_TRACKER_FEDERATION_FOLLOW_FLAGS_H_
#define SHOAL_TRACKER_FEDERATION_FOLLOW_FLAGS_H_

#include <string>

#include "common/tracker_options.h"
#include "shoal/status.h"

namespace CLI {
class App;
}

namespace shoal::tracker {

struct FollowFlags {
  std::string token_file;  // --follow-token-file; else SHOAL_FOLLOW_TOKEN
  std::string rate = "0";  // --follow-rate, bytes a second ("200MiB"); 0: unlimited
  std::string wait = "2s";
};

void AddFollowFlags(CLI::App* cmd, FollowOptions* o, FollowFlags* f);
// Reads the token, parses the sizes and durations into `o`; a mirror's
// settings are checked by TrackerOptions::Validate.
Status ApplyFollowFlags(const FollowFlags& f, FollowOptions* o);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FEDERATION_FOLLOW_FLAGS_H_
