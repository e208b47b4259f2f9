// FetchTarget: the version a chunk is fetched for. The agent that carries
// out an order reads the version's manifest to learn the chunk's file.
#ifndef SHOAL_TRACKER_FETCH_TARGET_H_
#define SHOAL_TRACKER_FETCH_TARGET_H_

#include <string>

#include "shoal/version_id.h"

namespace shoal::tracker {

struct FetchTarget {
  std::string ns, name;
  VersionId version;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_FETCH_TARGET_H_
