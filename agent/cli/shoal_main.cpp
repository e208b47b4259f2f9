// shoal: the command-line client.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"shoal: publish, pull and inspect model checkpoints"};
  app.set_config("--config", "", "read options from this TOML/INI file");
  app.require_subcommand(1);
  shoal::CommandRunner run;
  shoal::RegisterInspect(app, &run);
  shoal::RegisterPublish(app, &run);
  shoal::RegisterImport(app, &run);
  shoal::RegisterPull(app, &run);
  shoal::RegisterMount(app, &run);
  shoal::RegisterRegistryCommands(app, &run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  shoal::Status s = run();
  if (!s.ok()) {
    std::fprintf(stderr, "shoal: error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
