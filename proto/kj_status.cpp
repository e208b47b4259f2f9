#include "proto/kj_status.h"

#include <string>

namespace shoal {
namespace {
constexpr char kMarker[] = "shoal-status:";
}  // namespace

kj::Exception ExceptionFromStatus(const Status& s) {
  return kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                       kj::str(kMarker, static_cast<int>(s.code()), ":", s.message().c_str()));
}

void ThrowIfError(const Status& s) {
  if (!s.ok()) kj::throwFatalException(ExceptionFromStatus(s));
}

Status StatusFromException(const kj::Exception& e, const std::string& peer) {
  std::string d = e.getDescription().cStr();
  size_t at = d.find(kMarker);
  if (at != std::string::npos) {
    size_t code_start = at + sizeof(kMarker) - 1;
    size_t colon = d.find(':', code_start);
    if (colon != std::string::npos) {
      int code = std::atoi(d.substr(code_start, colon - code_start).c_str());
      std::string msg = d.substr(colon + 1);
      switch (static_cast<Status::Code>(code)) {
        case Status::Code::kNotFound:
          return Status::NotFound(msg);
        case Status::Code::kCorruption:
          return Status::Corruption(msg);
        case Status::Code::kIOError:
          return Status::IOError(msg);
        case Status::Code::kInvalidArgument:
          return Status::InvalidArgument(msg);
        case Status::Code::kUnavailable:
          return Status::Unavailable(msg);
        case Status::Code::kPermissionDenied:
          return Status::PermissionDenied(msg);
        case Status::Code::kNoSpace:
          return Status::NoSpace(msg);
        case Status::Code::kAlreadyExists:
          return Status::AlreadyExists(msg);
        case Status::Code::kUnauthenticated:
          return Status::Unauthenticated(msg);
        case Status::Code::kFailedPrecondition:
          return Status::FailedPrecondition(msg);
        case Status::Code::kOk:
          break;
      }
    }
  }
  switch (e.getType()) {
    case kj::Exception::Type::DISCONNECTED:
      return Status::Unavailable("lost the connection to " + peer + "; is it running?");
    case kj::Exception::Type::OVERLOADED:
      return Status::Unavailable(peer + " is overloaded; try again");
    default:
      return Status::IOError(peer + ": " + d.substr(0, 300));
  }
}

}  // namespace shoal
