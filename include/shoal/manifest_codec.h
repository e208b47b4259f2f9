// Canonical encoding and validating decoding of manifests.
#ifndef SHOAL_MANIFEST_CODEC_H_
#define SHOAL_MANIFEST_CODEC_H_

#include <string>
#include <string_view>

#include "shoal/manifest.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

// The canonical Cap'n Proto bytes of `m`, in canonical order whatever the
// order of m's lists. Fails if ValidateManifest(m) fails.
Result<std::string> EncodeManifest(const Manifest& m);

// Parses and fully validates canonical manifest bytes. Non-canonical bytes,
// oversized input and every rule of ValidateManifest are refused with a
// one-line error; nothing is allocated in proportion to a claimed size before
// that size is checked against ManifestLimits.
Result<Manifest> DecodeManifest(std::string_view bytes);

// SHA-256 of canonical bytes.
VersionId ComputeVersionId(std::string_view canonical_bytes);

// The manifest as JSON (hashes in lowercase hex), with its version ID.
// REQUIRES: ValidateManifest(m) is OK.
std::string ManifestToJson(const Manifest& m, const VersionId& id);

}  // namespace shoal

#endif  // SHOAL_MANIFEST_CODEC_H_
