#include "storage/chunk_gc.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "common/tracker_metrics.h"
#include "registry/registry_store.h"
#include "shoal/origin.h"
#include "shoal/utc_time.h"
#include "storage/upload_leases.h"

namespace shoal::tracker {

Result<GcResult> RunChunkGc(RegistryStore& store, Origin& origin, UploadLeases& leases,
                            TrackerMetrics& metrics, bool dry_run, int64_t grace_ms) {
  GcResult r;
  std::unordered_set<ChunkId> referenced;
  SHOAL_RETURN_IF_ERROR(store.ForEachManifest([&](const VersionId&, const Manifest& m) {
    for (const FileEntry& f : m.files) {
      for (const ChunkId& id : f.ChunkIds()) referenced.insert(id);
    }
  }));
  r.referenced = referenced.size();

  std::unordered_map<ChunkId, int64_t> first_seen;
  SHOAL_RETURN_IF_ERROR(
      store.ForEachChunk([&](const ChunkId& id, uint64_t, int64_t at) { first_seen[id] = at; }));

  const int64_t now = NowMs();
  std::vector<std::pair<ChunkId, uint64_t>> newly_seen;
  std::vector<std::pair<ChunkId, uint64_t>> sweep;
  std::string token;
  do {
    Result<ListPage> page = origin.List("chunks/", token, 1000);
    if (!page.ok()) return page.status().WithContext("listing chunks in " + origin.Describe());
    for (const ObjectInfo& o : page->objects) {
      auto id = ChunkId::ParseHex(o.key.substr(o.key.find('/') + 1));
      if (!id.ok() || referenced.count(*id) != 0) continue;
      auto seen = first_seen.find(*id);
      if (seen == first_seen.end()) {
        newly_seen.emplace_back(*id, o.size);
        ++r.young;
      } else if (now - seen->second < grace_ms) {
        ++r.young;
      } else {
        sweep.emplace_back(*id, o.size);
      }
    }
    token = page->next_token;
  } while (!token.empty());

  // Read after the listing, so a lease taken while it ran is seen.
  Result<std::unordered_set<ChunkId>> leased = leases.Leased(NowMs(), !dry_run);
  if (!leased.ok()) return leased.status().WithContext("reading upload leases");
  auto spared = std::remove_if(sweep.begin(), sweep.end(),
                               [&](const auto& c) { return leased->count(c.first) != 0; });
  r.young += static_cast<uint64_t>(sweep.end() - spared);
  sweep.erase(spared, sweep.end());
  r.unreferenced = sweep.size();

  if (dry_run) return r;
  SHOAL_RETURN_IF_ERROR(store.AddChunks(newly_seen, now));
  std::vector<ChunkId> removed;
  for (const auto& [id, size] : sweep) {
    Status s = origin.Delete(ChunkKey(id));
    if (!s.ok()) return s.WithContext("sweeping chunk " + id.ShortHex());
    removed.push_back(id);
    ++r.swept;
    r.swept_bytes += size;
  }
  SHOAL_RETURN_IF_ERROR(store.RemoveChunks(removed));
  metrics.gc_runs++;
  metrics.gc_swept_chunks += r.swept;
  metrics.gc_swept_bytes += r.swept_bytes;
  return r;
}

}  // namespace shoal::tracker
