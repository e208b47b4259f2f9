// Status and Result<T>: how every expected failure in Shoal is reported.
//
// A Status is OK or carries a code and a one-line message that names what
// failed and, where it can, what to do about it. Result<T> holds either a
// value or a non-OK Status. Neither throws; exceptions are kept for
// programming errors.
#ifndef SHOAL_STATUS_H_
#define SHOAL_STATUS_H_

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace shoal {

// [[nodiscard]]: a Status that nobody reads is an error nobody handles; a
// caller that means to ignore one says so with a cast to void.
class [[nodiscard]] Status {
 public:
  enum class Code : uint8_t {
    kOk = 0,
    kNotFound,          // a chunk, file, model or key does not exist
    kCorruption,        // bytes do not match their hash, or a format is malformed
    kIOError,           // the OS refused a read, write or rename
    kInvalidArgument,   // the caller passed something malformed
    kUnavailable,       // a peer, tracker or origin could not be reached; retryable
    kPermissionDenied,  // a valid token that lacks the right: role or namespace scope
    kNoSpace,           // the cache budget or the disk is full and nothing can be evicted
    kAlreadyExists,     // a create found the thing already there
    // No credentials, or ones that prove nothing: a token missing, malformed,
    // forged, expired or revoked. HTTP 401. Last, so the numbers of the
    // codes above (which cross the RPC boundary, kj_status.h) stay put.
    kUnauthenticated,
    // The thing exists but is not in the state the call needs: a version
    // whose upload to the origin failed. HTTP 409. After kUnauthenticated
    // for the same reason.
    kFailedPrecondition,
  };

  // An OK status.
  Status() = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status PermissionDenied(std::string msg) {
    return Status(Code::kPermissionDenied, std::move(msg));
  }
  static Status Unauthenticated(std::string msg) {
    return Status(Code::kUnauthenticated, std::move(msg));
  }
  static Status NoSpace(std::string msg) { return Status(Code::kNoSpace, std::move(msg)); }
  static Status AlreadyExists(std::string msg) {
    return Status(Code::kAlreadyExists, std::move(msg));
  }
  static Status FailedPrecondition(std::string msg) {
    return Status(Code::kFailedPrecondition, std::move(msg));
  }
  // An IOError whose message ends with strerror(err).
  static Status FromErrno(const std::string& what, int err);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  bool IsUnavailable() const { return code_ == Code::kUnavailable; }
  bool IsUnauthenticated() const { return code_ == Code::kUnauthenticated; }

  // "not found: chunk 3fa2... is not in the cache", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` and ": ".
  Status WithContext(const std::string& context) const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

const char* StatusCodeName(Status::Code code);

// Either a T or a non-OK Status. Accessing the value of a failed Result is a
// programming error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "a Result built from a Status must carry an error");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace shoal

// Returns early from the enclosing function when `expr` is a failed Status.
#define SHOAL_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::shoal::Status shoal_status_ = (expr);        \
    if (!shoal_status_.ok()) return shoal_status_; \
  } while (0)

#endif  // SHOAL_STATUS_H_
