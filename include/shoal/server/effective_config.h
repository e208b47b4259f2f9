// The effective configuration of a daemon, as a config file.
//
// `shoald --print-config` and `shoal-tracker serve --print-config` print what
// the flags, the config file, the environment and the defaults add up to, in
// the TOML form that --config reads: feeding the output back through
// --config prints the same text again.
//
//   [serve]                      (only when `section` is set)
//
//   # Cap'n Proto RPC address
//   rpc-listen="0.0.0.0:7400"
//
//   # S3 endpoint URL; empty = AWS
//   # s3-endpoint=""             (unset, no default: shown, not set)
//
//   # agent token (...)
//   # token=(not printed)        (a secret)
//
// An option that is unset and has no default is written commented out, so
// the printed file never overrides that option's environment variable.
// Secrets are never printed, whether set or not.
#ifndef SHOAL_SERVER_EFFECTIVE_CONFIG_H_
#define SHOAL_SERVER_EFFECTIVE_CONFIG_H_

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace shoal {

// REQUIRES: `app` has been parsed. `section` is the config-file section the
// options live in ("" for the top level, "serve" for a subcommand's); the
// config file is read by the top-level app. `secrets` are option names as in
// the file, without dashes ("token").
std::string EffectiveConfig(const CLI::App& app, const std::string& section,
                            const std::vector<std::string>& secrets);

}  // namespace shoal

#endif  // SHOAL_SERVER_EFFECTIVE_CONFIG_H_
