#include "storage/registry_follower.h"

#include "auth/token_verifier.h"
#include "registry/registry_store.h"
#include "shoal/manifest_codec.h"
#include "swarm/torrent_index.h"

namespace shoal::tracker {

Status RegistryFollower::Start() {
  Result<uint64_t> end = store_.FeedEnd();
  if (!end.ok()) return end.status().WithContext("read the registry's feed");
  SHOAL_RETURN_IF_ERROR(
      store_
          .ForEachManifest([this](const VersionId& id, const Manifest& m) { torrents_.Add(id, m); })
          .WithContext("indexing published torrents"));
  position_ = *end;
  return Status::OK();
}

Result<uint64_t> RegistryFollower::CatchUp() {
  SHOAL_RETURN_IF_ERROR(tokens_.Refresh());
  uint64_t applied = 0;
  for (;;) {
    Result<std::vector<FeedEntry>> entries = store_.FeedAfter(position_, 256);
    if (!entries.ok()) return entries.status().WithContext("read the registry's feed");
    for (const FeedEntry& e : *entries) {
      if (e.deleted) {
        torrents_.Remove(e.id);
      } else {
        Result<StoredVersion> v = store_.GetVersion(e.ns, e.name, e.id);
        // Deleted again since: a later entry says so.
        if (!v.ok() && !v.status().IsNotFound()) return v.status();
        if (v.ok()) {
          Result<Manifest> m = DecodeManifest(v->manifest_bytes);
          if (!m.ok()) return m.status().WithContext("manifest of " + e.id.ShortHex());
          torrents_.Add(e.id, *m);
        }
      }
      position_ = e.seq;
      ++applied;
    }
    if (entries->size() < 256) return applied;
  }
}

}  // namespace shoal::tracker
