#include "storage/origin_chunks.h"

#include <optional>
#include <unordered_set>
#include <utility>

#include "common/tracker_metrics.h"
#include "registry/registry_store.h"
#include "shoal/log.h"
#include "shoal/origin.h"
#include "shoal/parallel_for.h"
#include "shoal/utc_time.h"
#include "storage/upload_leases.h"

namespace shoal::tracker {
namespace {

// Confirms with HEADs that `ids` are in the origin. Returns the ones found
// with their sizes; the rest go to *missing.
std::vector<std::pair<ChunkId, uint64_t>> CheckOrigin(const OriginChunks& oc,
                                                      const std::vector<ChunkId>& ids,
                                                      std::vector<ChunkId>* missing,
                                                      Status* error) {
  std::vector<std::optional<uint64_t>> sizes(ids.size());
  std::vector<Status> errors(ids.size());
  ParallelFor(ids.size(), oc.parallelism, [&](size_t i) {
    oc.metrics.origin_checks++;
    Result<ObjectInfo> info = oc.origin.Head(ChunkKey(ids[i]));
    if (info.ok()) {
      sizes[i] = info->size;
    } else if (!info.status().IsNotFound()) {
      errors[i] = info.status();
    }
  });
  std::vector<std::pair<ChunkId, uint64_t>> found;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!errors[i].ok() && error->ok()) *error = errors[i];
    if (sizes[i]) {
      found.emplace_back(ids[i], *sizes[i]);
    } else {
      missing->push_back(ids[i]);
    }
  }
  return found;
}

// Whether the index holds each of `ids`, `oc.parallelism` reads at a time:
// each is a round trip to etcd for a fleet, and a publish names thousands.
Result<std::vector<bool>> Indexed(const OriginChunks& oc, const std::vector<ChunkId>& ids) {
  std::vector<char> known(ids.size(), 0);
  std::vector<Status> errors(ids.size());
  ParallelFor(ids.size(), oc.parallelism, [&](size_t i) {
    Result<bool> k = oc.store.HasChunk(ids[i]);
    if (k.ok()) {
      known[i] = *k ? 1 : 0;
    } else {
      errors[i] = k.status();
    }
  });
  for (const Status& e : errors) {
    if (!e.ok()) return e;
  }
  return std::vector<bool>(known.begin(), known.end());
}

// `ids` without repeats, in their first order.
std::vector<ChunkId> Distinct(const std::vector<ChunkId>& ids) {
  std::vector<ChunkId> out;
  std::unordered_set<ChunkId> seen;
  for (const ChunkId& id : ids) {
    if (seen.insert(id).second) out.push_back(id);
  }
  return out;
}

// The chunks of `ids` (without repeats) the index does not hold.
Result<std::vector<ChunkId>> Unindexed(const OriginChunks& oc, const std::vector<ChunkId>& ids) {
  const std::vector<ChunkId> distinct = Distinct(ids);
  Result<std::vector<bool>> known = Indexed(oc, distinct);
  if (!known.ok()) return known.status();
  std::vector<ChunkId> unknown;
  for (size_t i = 0; i < distinct.size(); ++i) {
    if (!(*known)[i]) unknown.push_back(distinct[i]);
  }
  return unknown;
}

void ReleaseLeases(UploadLeases& leases, const std::vector<ChunkId>& ids) {
  if (ids.empty()) return;
  Status s = leases.Release(ids);
  if (!s.ok()) {
    Log(LogLevel::kWarn, "upload.release_failed",
        {{"chunks", static_cast<int64_t>(ids.size())}, {"error", s.ToString()}});
  }
}

}  // namespace

Result<UploadPlan> PlanUpload(const OriginChunks& oc, UploadLeases& leases,
                              const std::vector<ChunkId>& ids, const std::string& holder,
                              int64_t ttl_ms) {
  Result<std::vector<ChunkId>> unindexed = Unindexed(oc, ids);
  if (!unindexed.ok()) return unindexed.status();
  const std::vector<ChunkId>& unknown = *unindexed;
  Result<std::vector<bool>> held = leases.Claim(unknown, holder, NowMs(), ttl_ms);
  if (!held.ok()) return held.status();
  UploadPlan plan;
  for (size_t i = 0; i < unknown.size(); ++i) {
    ((*held)[i] ? plan.upload : plan.wait).push_back(unknown[i]);
  }
  oc.metrics.chunks_planned += plan.upload.size();
  oc.metrics.chunks_waited += plan.wait.size();
  return plan;
}

Status RecordStored(const OriginChunks& oc, UploadLeases& leases, const std::vector<ChunkId>& ids) {
  const std::vector<ChunkId> distinct = Distinct(ids);
  Result<std::vector<bool>> known = Indexed(oc, distinct);
  if (!known.ok()) return known.status();
  std::vector<ChunkId> fresh, missing, indexed;
  for (size_t i = 0; i < distinct.size(); ++i) {
    if ((*known)[i]) {
      oc.metrics.duplicate_uploads++;
      indexed.push_back(distinct[i]);
    } else {
      fresh.push_back(distinct[i]);
    }
  }
  Status origin_error;
  auto found = CheckOrigin(oc, fresh, &missing, &origin_error);
  SHOAL_RETURN_IF_ERROR(oc.store.AddChunks(found, NowMs()));
  oc.metrics.chunks_indexed += found.size();
  for (const auto& f : found) indexed.push_back(f.first);
  ReleaseLeases(leases, indexed);
  if (!origin_error.ok()) return origin_error.WithContext("checking chunks in the origin");
  if (!missing.empty()) {
    return Status::NotFound(std::to_string(missing.size()) + " reported chunks are not in " +
                            oc.origin.Describe() + " (first: " + missing[0].ToHex() + ")");
  }
  return Status::OK();
}

Result<std::vector<ChunkId>> ChunksNotInOrigin(const OriginChunks& oc,
                                               const std::vector<ChunkId>& ids) {
  Result<std::vector<ChunkId>> unindexed = Unindexed(oc, ids);
  if (!unindexed.ok() || unindexed->empty()) return unindexed;
  std::vector<ChunkId> missing;
  Status origin_error;
  auto found = CheckOrigin(oc, *unindexed, &missing, &origin_error);
  SHOAL_RETURN_IF_ERROR(oc.store.AddChunks(found, NowMs()));
  oc.metrics.chunks_indexed += found.size();
  if (!origin_error.ok()) return origin_error.WithContext("checking chunks in the origin");
  return missing;
}

Status EnsureChunksInOrigin(const OriginChunks& oc, const Manifest& m) {
  std::vector<ChunkId> all;
  for (const FileEntry& f : m.files) {
    for (const ChunkId& id : f.ChunkIds()) all.push_back(id);
  }
  Result<std::vector<ChunkId>> unindexed = Unindexed(oc, all);
  if (!unindexed.ok()) return unindexed.status();
  const std::vector<ChunkId>& unknown = *unindexed;
  if (unknown.empty()) return Status::OK();
  std::vector<ChunkId> missing;
  Status origin_error;
  auto found = CheckOrigin(oc, unknown, &missing, &origin_error);
  SHOAL_RETURN_IF_ERROR(oc.store.AddChunks(found, NowMs()));
  oc.metrics.chunks_indexed += found.size();
  if (!origin_error.ok()) return origin_error.WithContext("checking chunks in the origin");
  if (!missing.empty()) {
    return Status::NotFound(std::to_string(missing.size()) + " of " +
                            std::to_string(Distinct(all).size()) + " chunks of " + m.ns + "/" +
                            m.name + " are not in " + oc.origin.Describe() +
                            " (first: " + missing[0].ToHex() + "); upload them before committing");
  }
  return Status::OK();
}

}  // namespace shoal::tracker
