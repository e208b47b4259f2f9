// `shoal-tracker recover`: puts back into a registry every version whose
// signed manifest copy is in the origin (manifest_archive.h), for a
// registry lost with its disk and no backup, or one restored from a backup
// older than the last publishes.
//
//   recover --origin URL [--data-dir D | --registry etcd://...] [--dry-run]
//
// Versions already in the registry are left alone; the others are stored
// as they were signed, without tags (tags live only in the registry: move
// them again with `shoal tag`), each with an audit record naming
// "local:<unix user>" and action "recover". Run it with the tracker
// stopped when the registry is LevelDB (it holds the folder's lock); an
// etcd registry may be recovered while the fleet runs.
#ifndef SHOAL_TRACKER_RECOVER_COMMAND_H_
#define SHOAL_TRACKER_RECOVER_COMMAND_H_

#include "common/tracker_options.h"
#include "shoal/status.h"

namespace CLI {
class App;
}

namespace shoal::tracker {

struct RecoverFlags {
  TrackerOptions opts;  // data_dir, registry, registry_ca_file, origin
  bool dry_run = false;
};

void AddRecoverFlags(CLI::App* cmd, RecoverFlags* f);
Status RunRecover(const RecoverFlags& f);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RECOVER_COMMAND_H_
