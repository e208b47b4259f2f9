#include "cli/publish_uploads.h"

#include <algorithm>
#include <thread>
#include <unordered_set>

namespace shoal {
namespace {

// How long a round waits before asking again about chunks another publish
// is uploading.
constexpr auto kWaitForOthers = std::chrono::milliseconds(500);

// The tracker hears of stored chunks at least this often while uploads run.
constexpr auto kReportEvery = std::chrono::milliseconds(300);

}  // namespace

Status PublishUploads::Plan(const std::vector<ChunkId>& ids) {
  if (ids.empty()) return Status::OK();
  auto plan = tracker_.PlanUpload(ns_, ids, upload_id_);
  if (!plan.ok()) return plan.status();
  std::unordered_set<ChunkId> upload(plan->upload.begin(), plan->upload.end());
  std::vector<ChunkId> release;
  for (const ChunkId& id : ids) {
    if (upload.count(id) == 0) release.push_back(id);
  }
  // Chunks another publish is uploading are checked again by Finish; their
  // bytes are read again if that one gives up.
  up_.Release(release);
  up_.Upload(plan->upload);
  return Status::OK();
}

Status PublishUploads::Report(std::chrono::milliseconds wait) {
  std::vector<ChunkId> stored = up_.TakeStored(wait);
  SHOAL_RETURN_IF_ERROR(up_.status());
  if (!stored.empty()) SHOAL_RETURN_IF_ERROR(tracker_.ChunksStored(ns_, stored));
  return Renew();
}

Status PublishUploads::Renew() {
  if (version_name_.empty() || std::chrono::steady_clock::now() < next_renew_) {
    return Status::OK();
  }
  Result<uint32_t> lease_ms = tracker_.RenewUpload(ns_, version_name_, version_);
  if (!lease_ms.ok()) return lease_ms.status();
  // A third of the lease: two renewals may be lost before the version is
  // taken for abandoned.
  next_renew_ = std::chrono::steady_clock::now() +
                std::chrono::milliseconds(std::max<uint32_t>(*lease_ms / 3, 100));
  return Status::OK();
}

Status PublishUploads::Step(std::chrono::milliseconds wait) {
  SHOAL_RETURN_IF_ERROR(Plan(up_.TakeOffered()));
  return Report(wait);
}

void PublishUploads::KeepAlive(const std::string& name, const VersionId& id) {
  version_name_ = name;
  version_ = id;
  next_renew_ = {};  // renew at once, which also learns the lease
}

Status PublishUploads::Finish(const std::vector<ChunkId>& all,
                              const std::function<void(uint64_t, uint64_t)>& progress) {
  SHOAL_RETURN_IF_ERROR(Plan(up_.TakeOffered()));
  for (;;) {
    while (up_.Busy()) {
      SHOAL_RETURN_IF_ERROR(Report(kReportEvery));
      progress(up_.stats().done_bytes, up_.stats().done_bytes + up_.queued_bytes());
    }
    SHOAL_RETURN_IF_ERROR(Report(std::chrono::milliseconds(0)));
    auto plan = tracker_.PlanUpload(ns_, all, upload_id_);
    if (!plan.ok()) return plan.status();
    if (plan->upload.empty() && plan->wait.empty()) return Status::OK();
    if (plan->upload.empty()) {
      // Another publish is uploading the rest; wait for it, or for its lease to lapse.
      std::this_thread::sleep_for(kWaitForOthers);
      SHOAL_RETURN_IF_ERROR(Renew());
      continue;
    }
    up_.Upload(plan->upload);
  }
}

}  // namespace shoal
