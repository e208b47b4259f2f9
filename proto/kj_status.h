// The one place where Cap'n Proto exceptions and Shoal's Status meet.
//
// Servers throw a Status as a kj::Exception whose description carries the
// code and the message; clients turn any kj::Exception back into a Status,
// so a remote error reads the same as a local one.
#ifndef SHOAL_PROTO_KJ_STATUS_H_
#define SHOAL_PROTO_KJ_STATUS_H_

#include <kj/exception.h>

#include <utility>

#include "shoal/status.h"

namespace shoal {

// A kj::Exception that StatusFromException() turns back into `s`.
// REQUIRES: !s.ok().
kj::Exception ExceptionFromStatus(const Status& s);

// Throws ExceptionFromStatus(s) unless s is OK.
void ThrowIfError(const Status& s);

// The value of `r`, or throws its Status as ThrowIfError does.
template <typename T>
T ValueOrThrow(Result<T> r) {
  ThrowIfError(r.status());
  return std::move(r).value();
}

// Recovers the Status a server threw, or maps a transport failure
// (disconnected, overloaded) to Unavailable naming `peer`.
Status StatusFromException(const kj::Exception& e, const std::string& peer);

}  // namespace shoal

#endif  // SHOAL_PROTO_KJ_STATUS_H_
