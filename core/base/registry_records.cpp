#include "shoal/registry_records.h"

#include <algorithm>

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

bool VersionInfo::HasLabels(const std::vector<std::string>& wanted) const {
  for (const std::string& w : wanted) {
    if (std::find(labels.begin(), labels.end(), w) == labels.end()) return false;
  }
  return true;
}

std::string NoVersionWithLabels(const std::string& model, const std::vector<std::string>& labels) {
  std::string out = "no version of " + model + " carries the label(s) ";
  for (size_t i = 0; i < labels.size(); ++i) out += (i > 0 ? ", " : "") + labels[i];
  return out;
}

Status CheckLabelFilter(const std::vector<std::string>& labels) {
  if (labels.size() > 32) return Status::InvalidArgument("at most 32 labels in a filter");
  for (const std::string& l : labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0 || l.size() > 1024) {
      return Status::InvalidArgument("label filter '" + l.substr(0, 60) + "' is not key=value");
    }
  }
  return Status::OK();
}

Result<VersionState> ParseVersionState(const std::string& name) {
  if (name.empty() || name == "durable") return VersionState::kDurable;
  if (name == "uploading") return VersionState::kUploading;
  if (name == "failed") return VersionState::kFailed;
  return Status::InvalidArgument("unknown version state '" + name.substr(0, 40) +
                                 "' (durable, uploading or failed)");
}

}  // namespace shoal
