// The KEY=VALUE files test fixtures write (tests/s3/radosgw.sh's s3.env,
// tests/etcd/etcd_cluster.sh's etcd.env), read into a map.
#ifndef SHOAL_TESTS_SUPPORT_ENV_FILE_H_
#define SHOAL_TESTS_SUPPORT_ENV_FILE_H_

#include <fstream>
#include <map>
#include <string>

namespace shoal::testing {

// Every KEY=VALUE line of the file at `path`; empty if `path` is null or
// the file cannot be read.
inline std::map<std::string, std::string> ReadEnvFile(const char* path) {
  std::map<std::string, std::string> vars;
  if (path == nullptr) return vars;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return vars;
}

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_ENV_FILE_H_
