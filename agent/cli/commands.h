// The shoal CLI's subcommands. Each Register* adds one subcommand to the app
// and arranges for it to run; main() maps a failed Status to one line on
// stderr and a non-zero exit.
#ifndef SHOAL_AGENT_CLI_COMMANDS_H_
#define SHOAL_AGENT_CLI_COMMANDS_H_

#include <functional>

#include "shoal/status.h"

namespace CLI {
class App;
}

namespace shoal {

// What a parsed subcommand runs.
using CommandRunner = std::function<Status()>;

void RegisterInspect(CLI::App& app, CommandRunner* run);

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_COMMANDS_H_
