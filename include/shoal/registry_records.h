// Registry records: what the tracker's registry says about models, versions
// and tags, as plain C++ values. The tracker keeps them, its RPC and HTTP
// views send them, and the CLI and agents read them.
//
// The wire and storage form is Cap'n Proto (proto/tracker.capnp);
// proto/record_codec.h converts. This header has no Cap'n Proto types, so it
// is cheap to include.
#ifndef SHOAL_REGISTRY_RECORDS_H_
#define SHOAL_REGISTRY_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

// Whether a version's chunks are all in the origin. A version may be
// committed before they are (pullable from its publisher's agent while the
// upload goes on): it is uploading until its publisher says the upload
// finished, and failed if the upload failed or the publisher stopped
// renewing it. A failed version does not resolve.
enum class VersionState { kDurable, kUploading, kFailed };

// "durable", "uploading" or "failed".
const char* VersionStateName(VersionState s);
// The inverse of VersionStateName; empty (a tracker from before states) is
// kDurable. InvalidArgument for any other text.
Result<VersionState> ParseVersionState(const std::string& name);

// One published version of ns/name.
struct VersionInfo {
  std::string ns, name;
  VersionId id;
  std::string created_by;     // the publishing token's subject
  int64_t created_at_ms = 0;  // Unix epoch, milliseconds
  std::optional<VersionId> parent;
  uint64_t total_bytes = 0;
  uint32_t file_count = 0;
  std::vector<std::string> tags;  // the tags that point at it now
  VersionState state = VersionState::kDurable;
  std::string state_detail;         // uploading: who uploads it since when; failed: why
  std::vector<std::string> labels;  // the manifest's labels, "key=value", sorted by key

  // Whether the version carries every label of `wanted` ("key=value").
  bool HasLabels(const std::vector<std::string>& wanted) const;
};

// "no version of `model` carries the label(s) a=1, b=2": what a label
// filter that matched nothing says, wherever it is asked.
std::string NoVersionWithLabels(const std::string& model, const std::vector<std::string>& labels);

// OK if every label is "key=value" with a key (as `shoal publish --label`
// takes them); else InvalidArgument naming the first that is not.
Status CheckLabelFilter(const std::vector<std::string>& labels);

// One model: how many versions it has, its newest, and its tags.
struct ModelInfo {
  std::string ns, name;
  uint32_t version_count = 0;
  std::optional<VersionId> latest;  // the most recently published, if any
  int64_t latest_at_ms = 0;         // when `latest` was published; 0 without one
  std::vector<std::pair<std::string, VersionId>> tags;  // (tag, version it points at)
};

// One move of a tag; the registry keeps every one.
struct TagChange {
  std::string ns, name, tag;
  std::optional<VersionId> from;  // none when the tag was created
  std::optional<VersionId> to;    // none when the tag was removed
  std::string by;                 // the subject of the token that moved it
  int64_t at_ms = 0;              // Unix epoch, milliseconds
};

}  // namespace shoal

#endif  // SHOAL_REGISTRY_RECORDS_H_
