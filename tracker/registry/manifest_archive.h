// ManifestArchive: a copy of every signed manifest in the origin, beside the
// chunks, so that any tracker that can read the bucket can serve any
// version, and a registry lost with its disk can be rebuilt from the bucket.
//
// Each version is one object, "manifests/<ns>/<name>/<version hex>": a flat
// Cap'n Proto SignedManifest (the canonical manifest bytes, the tracker's
// signature over the version ID, and the signing key's ID). Objects are
// written before the registry records the version and never change, so
// the last few read are kept in memory.
//
// Get checks that the bytes hash to the version ID asked for: a damaged or
// misplaced object is Corruption, never a wrong manifest. Clients check the
// signature as they do for every manifest the tracker serves.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_MANIFEST_ARCHIVE_H_
#define SHOAL_TRACKER_MANIFEST_ARCHIVE_H_

#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "registry/registry_store.h"
#include "shoal/origin.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal::tracker {

class ManifestArchive {
 public:
  // `origin` must outlive the archive. Keeps the last `cache_entries`
  // manifests read or written in memory.
  explicit ManifestArchive(Origin& origin, size_t cache_entries = 64)
      : origin_(origin), cache_entries_(cache_entries) {}

  // The object key of ns/name's version `id`.
  static std::string KeyOf(const std::string& ns, const std::string& name, const VersionId& id);

  // Stores `v` (its manifest bytes must be set). Writing the same version
  // again is harmless.
  Status Put(const std::string& ns, const std::string& name, const StoredVersion& v);
  // NotFound if the origin has no copy; Corruption if the copy does not
  // read back as version `id`.
  Result<StoredVersion> Get(const std::string& ns, const std::string& name, const VersionId& id);
  // Removes the copy (a deleted version). A missing copy is OK.
  Status Delete(const std::string& ns, const std::string& name, const VersionId& id);
  // Calls fn(ns, name, version) for every archived version, in key order;
  // a copy that does not read back is an error naming its key.
  Status ForEach(const std::function<Status(const std::string&, const std::string&,
                                            const StoredVersion&)>& fn);

 private:
  void Remember(const std::string& key, const StoredVersion& v);

  Origin& origin_;
  const size_t cache_entries_;
  std::mutex mu_;
  std::list<std::pair<std::string, StoredVersion>> lru_;  // newest first; protected by mu_
  std::unordered_map<std::string, std::list<std::pair<std::string, StoredVersion>>::iterator>
      index_;  // protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_MANIFEST_ARCHIVE_H_
