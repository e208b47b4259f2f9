// Secret files: small files of key material that only their owner may read.
//
// Both the token secret and the manifest signing key live in the data
// folder. They are created once, atomically, with mode 0600, and a file that
// group or others can read is refused rather than trusted.
#ifndef SHOAL_SECRET_FILE_H_
#define SHOAL_SECRET_FILE_H_

#include <string>

#include "shoal/status.h"

namespace shoal {

// Reads the whole secret file at `path`.
// NotFound if it does not exist; PermissionDenied unless it is a regular
// file (symlinks are followed, as Kubernetes secret volumes need) that only
// its owner may access (mode & 077 == 0, so 0600 and 0400 both pass).
Result<std::string> ReadSecretFile(const std::string& path);

// Creates `path` holding `contents` with mode 0600: written to a temporary
// file beside it, fsynced, then linked into place so that a concurrent
// creator never overwrites it; the directory is fsynced too.
// AlreadyExists if `path` appeared meanwhile (the caller should read it).
Status CreateSecretFile(const std::string& path, const std::string& contents);

}  // namespace shoal

#endif  // SHOAL_SECRET_FILE_H_
