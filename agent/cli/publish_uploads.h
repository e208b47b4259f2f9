// PublishUploads: the tracker's part in a publish's uploads. As chunks are
// hashed it asks the tracker which of them the origin lacks (leasing them
// to this publish), queues those on a ChunkUploader and drops the bytes of
// the rest, and reports stored chunks back in batches. Once the version is
// committed early (pullable before durable), it also keeps the version's
// upload lease alive, so the tracker can tell a publish still going from
// one whose publisher died.
//
// Thread-safety: one thread, the tracker client's.
#ifndef SHOAL_AGENT_CLI_PUBLISH_UPLOADS_H_
#define SHOAL_AGENT_CLI_PUBLISH_UPLOADS_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cli/chunk_uploader.h"
#include "client/tracker_client.h"

namespace shoal {

class PublishUploads {
 public:
  // `upload_id` names the publish for its chunk leases (Registry.planUpload).
  PublishUploads(TrackerClient& tracker, ChunkUploader& uploader, std::string ns,
                 std::string upload_id)
      : tracker_(tracker), up_(uploader), ns_(std::move(ns)), upload_id_(std::move(upload_id)) {}

  // Plans the chunks offered since the last call and reports those stored,
  // waiting up to `wait` for uploads to end.
  Status Step(std::chrono::milliseconds wait);

  // From now on, renews the upload lease of version `id` of `name` (in
  // this publish's namespace) while Step and Finish run.
  void KeepAlive(const std::string& name, const VersionId& id);

  // Uploads every chunk of `all` that the origin still lacks, round after
  // round, until none is missing or being uploaded by another publish.
  // `progress` is called now and then with the bytes done and planned.
  Status Finish(const std::vector<ChunkId>& all,
                const std::function<void(uint64_t done, uint64_t planned)>& progress);

 private:
  Status Plan(const std::vector<ChunkId>& ids);
  Status Report(std::chrono::milliseconds wait);
  Status Renew();

  TrackerClient& tracker_;
  ChunkUploader& up_;
  const std::string ns_, upload_id_;
  std::string version_name_;  // set by KeepAlive
  VersionId version_;
  std::chrono::steady_clock::time_point next_renew_{};
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_PUBLISH_UPLOADS_H_
