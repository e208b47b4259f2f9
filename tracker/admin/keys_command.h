// `shoal-tracker keys create --secrets-dir DIR`: makes the secrets a
// tracker, or a fleet of trackers sharing them, needs: the token secret,
// the manifest signing key and the peer CA. Files already there are kept
// (and checked), so the command is safe to run again; it prints what it
// made and the signing key's ID.
#ifndef SHOAL_TRACKER_KEYS_COMMAND_H_
#define SHOAL_TRACKER_KEYS_COMMAND_H_

#include <string>

#include "shoal/status.h"

namespace CLI {
class App;
}

namespace shoal::tracker {

struct KeysFlags {
  std::string secrets_dir;
};

void AddKeysCommands(CLI::App* keys, KeysFlags* f);
Status RunKeysCreate(const KeysFlags& f);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_KEYS_COMMAND_H_
