// ModelRef: "namespace/name:ref", where ref is a tag or a version ID (or a
// prefix of 8 or more hex digits). "namespace/name" alone means ":latest".
#ifndef SHOAL_MODEL_REF_H_
#define SHOAL_MODEL_REF_H_

#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

class ModelRef {
 public:
  // Validates the namespace and name (see ValidateName) and that ref is not
  // empty; with `require_ref`, "ns/name" without ":ref" is refused.
  static Result<ModelRef> Parse(std::string_view text, bool require_ref = false);

  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }
  const std::string& ref() const { return ref_; }
  std::string ToString() const { return ns_ + "/" + name_ + ":" + ref_; }

 private:
  std::string ns_, name_, ref_;
};

}  // namespace shoal

#endif  // SHOAL_MODEL_REF_H_
