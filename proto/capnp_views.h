// Views of Shoal's byte types as Cap'n Proto Data, and back, for the RPC
// services and clients.
//
// Reading an ID back is strict: Data of any size but 32 bytes is refused with
// InvalidArgument naming what it should have been, never dropped or padded.
#ifndef SHOAL_PROTO_CAPNP_VIEWS_H_
#define SHOAL_PROTO_CAPNP_VIEWS_H_

#include <capnp/blob.h>
#include <capnp/list.h>
#include <kj/common.h>

#include <optional>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/hash256.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

inline kj::ArrayPtr<const kj::byte> Raw(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

template <typename Tag>
kj::ArrayPtr<const kj::byte> Raw(const Hash256<Tag>& h) {
  return kj::arrayPtr(h.data(), Hash256<Tag>::kSize);
}

inline std::string Text(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }

inline std::string Bytes(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

Result<VersionId> ParseVersionId(capnp::Data::Reader d);
// Empty Data is no version (a tag that was created, a model with none).
Result<std::optional<VersionId>> ParseOptionalVersionId(capnp::Data::Reader d);
Result<ChunkId> ParseChunkId(capnp::Data::Reader d);
// Every ID in `list`; fails on the first of the wrong size.
Result<std::vector<ChunkId>> ParseChunkIds(capnp::List<capnp::Data>::Reader list);

// Writes `ids` into a list initialised to ids.size() elements.
void SetChunkIds(const std::vector<ChunkId>& ids, capnp::List<capnp::Data>::Builder out);

}  // namespace shoal

#endif  // SHOAL_PROTO_CAPNP_VIEWS_H_
