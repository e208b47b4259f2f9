#include "shoal/registry_records.h"

namespace shoal {

const char* VersionStateName(VersionState s) {
  switch (s) {
    case VersionState::kUploading:
      return "uploading";
    case VersionState::kFailed:
      return "failed";
    case VersionState::kDurable:
      break;
  }
  return "durable";
}

Result<VersionState> ParseVersionState(const std::string& name) {
  if (name.empty() || name == "durable") return VersionState::kDurable;
  if (name == "uploading") return VersionState::kUploading;
  if (name == "failed") return VersionState::kFailed;
  return Status::InvalidArgument("unknown version state '" + name.substr(0, 40) +
                                 "' (durable, uploading or failed)");
}

}  // namespace shoal
