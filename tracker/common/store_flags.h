// The flags that say where a tracker keeps things, shared by `serve` and
// `recover`: the origin (chunks and manifest copies) and the registry.
#ifndef SHOAL_TRACKER_STORE_FLAGS_H_
#define SHOAL_TRACKER_STORE_FLAGS_H_

#include "common/tracker_options.h"

namespace CLI {
class App;
}

namespace shoal::tracker {

// --origin (required) and the S3 flags.
void AddOriginFlags(CLI::App* cmd, OriginOptions* o);
// --registry and --registry-ca.
void AddRegistryFlags(CLI::App* cmd, TrackerOptions* o);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_STORE_FLAGS_H_
