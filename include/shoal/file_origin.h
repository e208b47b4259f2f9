// FileOrigin: an Origin that is a folder on a local or shared file system.
//
// Objects are plain files under the root, named by their key. Writes go to a
// temporary file in the same folder, are fsynced, and are renamed into place,
// so a reader never sees a partial object. Keys that are absolute, contain
// "..", "." or empty segments, a backslash or a NUL are refused, so no key
// can reach outside the root.
#ifndef SHOAL_FILE_ORIGIN_H_
#define SHOAL_FILE_ORIGIN_H_

#include <memory>
#include <string>

#include "shoal/origin.h"

namespace shoal {

// Opens (and creates, if missing) the folder `root`.
Result<std::unique_ptr<Origin>> NewFileOrigin(const std::string& root);

}  // namespace shoal

#endif  // SHOAL_FILE_ORIGIN_H_
