#include "scheduler/version_chunks.h"

#include "registry/registry_store.h"
#include "shoal/manifest_codec.h"

namespace shoal::tracker {

Result<std::shared_ptr<const ChunkSet>> StoredVersionChunks::Load(const FetchTarget& t) {
  Result<StoredVersion> v = store_.GetVersion(t.ns, t.name, t.version);
  if (!v.ok()) return v.status();
  Result<Manifest> m = DecodeManifest(v->manifest_bytes);
  if (!m.ok()) return m.status();
  auto set = std::make_shared<ChunkSet>();
  for (const FileEntry& f : m->files) {
    for (const ChunkId& c : f.ChunkIds()) set->insert(c);
  }
  return std::shared_ptr<const ChunkSet>(set);
}

}  // namespace shoal::tracker
