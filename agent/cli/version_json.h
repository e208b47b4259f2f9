// The one JSON document `shoal publish --json` and `shoal import --json`
// print for scripts: what was committed, its state, tags, labels, sizes,
// what was uploaded and, for an import, where it came from.
#ifndef SHOAL_AGENT_CLI_VERSION_JSON_H_
#define SHOAL_AGENT_CLI_VERSION_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "client/tracker_client.h"
#include "shoal/manifest.h"

namespace shoal {

struct CommittedJson {
  const Manifest* manifest = nullptr;
  const SignedVersion* version = nullptr;
  std::vector<std::string> tags;
  uint64_t uploaded_chunks = 0;
  uint64_t uploaded_bytes = 0;
  int64_t read_bytes = -1;  // read from the source (imports); -1: not printed

  // {"ref":"ns/name:<id>","version":…,"created":…,"state":…,"tags":[…],
  //  "labels":["k=v",…],"files":N,"total_bytes":N,"uploaded_chunks":N,
  //  "uploaded_bytes":N[,"read_bytes":N][,"source":{"url","revision","commit"}]}
  std::string ToString() const;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_VERSION_JSON_H_
