// The shoal CLI's subcommands. Each Register* adds one subcommand to the app
// and arranges for it to run; main() maps a failed Status to one line on
// stderr and a non-zero exit.
#ifndef SHOAL_AGENT_CLI_COMMANDS_H_
#define SHOAL_AGENT_CLI_COMMANDS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "shoal/status.h"

namespace CLI {
class App;
}

namespace shoal {

// What a parsed subcommand runs.
using CommandRunner = std::function<Status()>;

void RegisterInspect(CLI::App& app, CommandRunner* run);
void RegisterPublish(CLI::App& app, CommandRunner* run);
void RegisterImport(CLI::App& app, CommandRunner* run);
void RegisterMount(CLI::App& app, CommandRunner* run);
void RegisterPull(CLI::App& app, CommandRunner* run);
void RegisterRegistryCommands(CLI::App& app, CommandRunner* run);

// "2026-11-29 18:00:00Z"
std::string FormatTime(int64_t unix_ms);

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_COMMANDS_H_
