#include "shoal/model_ref.h"

#include "shoal/manifest.h"

namespace shoal {

Result<ModelRef> ModelRef::Parse(std::string_view text, bool require_ref) {
  if (text.size() > 600) return Status::InvalidArgument("model reference is too long");
  std::string s(text);
  const std::string shown = "'" + s.substr(0, 200) + "'";
  size_t slash = s.find('/');
  if (slash == std::string::npos) {
    return Status::InvalidArgument(shown + " is not namespace/model[:tag]");
  }
  size_t colon = s.find(':', slash);
  ModelRef r;
  r.ns_ = s.substr(0, slash);
  r.name_ = s.substr(slash + 1, colon == std::string::npos ? std::string::npos : colon - slash - 1);
  if (colon == std::string::npos) {
    if (require_ref) return Status::InvalidArgument(shown + " needs a :tag or :version");
    r.ref_ = "latest";
  } else {
    r.ref_ = s.substr(colon + 1);
    if (r.ref_.empty()) return Status::InvalidArgument(shown + " has an empty tag after ':'");
  }
  SHOAL_RETURN_IF_ERROR(ValidateName("namespace", r.ns_).WithContext("in " + shown));
  SHOAL_RETURN_IF_ERROR(ValidateName("model name", r.name_).WithContext("in " + shown));
  return r;
}

}  // namespace shoal
