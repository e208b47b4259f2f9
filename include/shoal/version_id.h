// VersionId: an immutable checkpoint version, the SHA-256 of its manifest's
// canonical bytes.
#ifndef SHOAL_VERSION_ID_H_
#define SHOAL_VERSION_ID_H_

#include "shoal/hash256.h"

namespace shoal {

struct VersionIdTag {
  static constexpr const char* kName = "version id";
};
using VersionId = Hash256<VersionIdTag>;

}  // namespace shoal

#endif  // SHOAL_VERSION_ID_H_
