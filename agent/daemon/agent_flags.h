// shoald's command line: every AgentOptions field as a flag, and as a
// config-file key of the same name (--config), plus the settings that are
// parsed later (--cache-size, --log-level) and --print-config.
#ifndef SHOAL_AGENT_DAEMON_AGENT_FLAGS_H_
#define SHOAL_AGENT_DAEMON_AGENT_FLAGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "daemon/agent_options.h"

namespace shoal {

struct AgentFlags {
  AgentOptions options;
  std::string cache_size = "100GiB";  // ParseByteSize form; sets options.cache_bytes
  std::string peer_upload_rate =
      "0";                         // ParseByteSize form, per second; sets options.peer_upload_rate
  std::string log_level = "info";  // ParseLogLevel form
  bool print_config = false;       // print the effective configuration and exit
};

// Declares every flag on `app`, bound to `flags`, which must outlive it. A
// config-file key that names no flag is an error.
void AddAgentFlags(CLI::App& app, AgentFlags& flags);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_AGENT_FLAGS_H_
