// A LevelDB Env whose files are private to the process's user: every file
// it creates is made 0600 and every folder 0700, whatever the umask. The
// chunk index uses it, so the cache's inner modes match its folder's
// (docs/security.md, "The cache").
#ifndef SHOAL_CORE_STORE_PRIVATE_FILES_ENV_H_
#define SHOAL_CORE_STORE_PRIVATE_FILES_ENV_H_

#include <leveldb/env.h>

#include <string>

namespace shoal {

// The one such Env, wrapping leveldb::Env::Default(); never destroyed.
leveldb::Env* PrivateFilesEnv();

// Narrows `dir` to 0700 and the files directly in it to 0600: for a folder
// LevelDB made before it was opened with PrivateFilesEnv.
void NarrowToPrivate(const std::string& dir);

}  // namespace shoal

#endif  // SHOAL_CORE_STORE_PRIVATE_FILES_ENV_H_
