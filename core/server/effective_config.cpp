#include "shoal/server/effective_config.h"

#include <CLI/CLI.hpp>
#include <set>
#include <sstream>

namespace shoal {

std::string EffectiveConfig(const CLI::App& app, const std::string& section,
                            const std::vector<std::string>& secrets) {
  const std::set<std::string> secret(secrets.begin(), secrets.end());
  std::set<std::string> unset;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() == 0 && opt->get_default_str().empty()) unset.insert(opt->get_single_name());
  }

  std::string out = section.empty() ? "" : "[" + section + "]\n";
  std::istringstream lines(app.config_to_str(/*default_also=*/true, /*write_description=*/true));
  std::string line;
  while (std::getline(lines, line)) {
    size_t eq = line.find('=');
    std::string key = line[0] == '#' || eq == std::string::npos ? "" : line.substr(0, eq);
    if (secret.count(key) != 0) {
      line = "# " + key + "=(not printed)";
    } else if (unset.count(key) != 0) {
      line = "# " + line;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace shoal
