// Views of Shoal's byte types as Cap'n Proto Data, and back, for the RPC
// services and clients.
#ifndef SHOAL_PROTO_CAPNP_VIEWS_H_
#define SHOAL_PROTO_CAPNP_VIEWS_H_

#include <capnp/blob.h>
#include <kj/common.h>

#include <string>

#include "shoal/hash256.h"

namespace shoal {

inline kj::ArrayPtr<const kj::byte> Raw(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

template <typename Tag>
kj::ArrayPtr<const kj::byte> Raw(const Hash256<Tag>& h) {
  return kj::arrayPtr(h.data(), Hash256<Tag>::kSize);
}

inline std::string Text(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }

}  // namespace shoal

#endif  // SHOAL_PROTO_CAPNP_VIEWS_H_
