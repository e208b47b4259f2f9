#include "shoal/status.h"

#include <cstring>

namespace shoal {

const char* StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kNotFound:
      return "not found";
    case Status::Code::kCorruption:
      return "corruption";
    case Status::Code::kIOError:
      return "I/O error";
    case Status::Code::kInvalidArgument:
      return "invalid argument";
    case Status::Code::kUnavailable:
      return "unavailable";
    case Status::Code::kPermissionDenied:
      return "permission denied";
    case Status::Code::kNoSpace:
      return "no space";
    case Status::Code::kAlreadyExists:
      return "already exists";
    case Status::Code::kUnauthenticated:
      return "unauthenticated";
    case Status::Code::kFailedPrecondition:
      return "failed precondition";
  }
  return "unknown";
}

Status Status::FromErrno(const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return NoSpace(std::move(msg));
  if (err == ENOENT) return NotFound(std::move(msg));
  if (err == EACCES || err == EPERM) return PermissionDenied(std::move(msg));
  return IOError(std::move(msg));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace shoal
