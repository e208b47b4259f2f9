// Opens the registry's key-value engine that TrackerOptions name: LevelDB
// in the data folder, or the etcd cluster of --registry (checked with one
// read, so a wrong address fails at start in one line).
#ifndef SHOAL_TRACKER_REGISTRY_OPEN_H_
#define SHOAL_TRACKER_REGISTRY_OPEN_H_

#include <memory>

#include "common/tracker_options.h"
#include "kv/kv_store.h"
#include "shoal/status.h"

namespace shoal::tracker {

Result<std::unique_ptr<KvStore>> OpenRegistryKv(const TrackerOptions& o);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_OPEN_H_
