// Building a manifest from a checkpoint folder on disk.
#ifndef SHOAL_MANIFEST_BUILDER_H_
#define SHOAL_MANIFEST_BUILDER_H_

#include <string>

#include "shoal/hash_cache.h"
#include "shoal/manifest.h"
#include "shoal/piece_hasher.h"
#include "shoal/status.h"

namespace shoal {

struct BuildOptions {
  HashOptions hash;                 // piece size, threads, read size
  bool follow_symlinks = false;     // false: a symlink is an error naming it
  std::string ns = "local";         // namespace of the manifest
  std::string name;                 // model name; empty = derived from the folder name
  std::string created_by;           // empty = $USER, else "unknown"
  HashCache* hash_cache = nullptr;  // files unchanged since cached are not read again
};

// Walks `dir`, hashes every regular file, and returns a validated manifest
// (files sorted by path; empty folders recorded). Symbolic links are refused
// unless options.follow_symlinks, in which case their targets are hashed as
// regular files or walked as folders. Sockets, FIFOs and devices are refused.
// `progress` is as for HashFiles.
Result<Manifest> BuildManifest(const std::string& dir, const BuildOptions& options,
                               const HashProgress& progress = {});

// The model name derived from a folder name: lowercased, with characters
// outside [a-z0-9._-] replaced by '-'.
std::string ModelNameFromFolder(const std::string& dir);

}  // namespace shoal

#endif  // SHOAL_MANIFEST_BUILDER_H_
