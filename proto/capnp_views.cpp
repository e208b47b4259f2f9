#include "proto/capnp_views.h"

namespace shoal {
namespace {

template <typename Tag>
Result<Hash256<Tag>> ParseHash(capnp::Data::Reader d) {
  if (d.size() != Hash256<Tag>::kSize) {
    return Status::InvalidArgument(std::string("a ") + Tag::kName + " is not " +
                                   std::to_string(Hash256<Tag>::kSize) + " bytes (got " +
                                   std::to_string(d.size()) + ")");
  }
  return Hash256<Tag>::FromBytes(d.begin());
}

}  // namespace

Result<VersionId> ParseVersionId(capnp::Data::Reader d) { return ParseHash<VersionIdTag>(d); }

Result<std::optional<VersionId>> ParseOptionalVersionId(capnp::Data::Reader d) {
  if (d.size() == 0) return std::optional<VersionId>();
  Result<VersionId> id = ParseVersionId(d);
  if (!id.ok()) return id.status();
  return std::optional<VersionId>(*id);
}

Result<ChunkId> ParseChunkId(capnp::Data::Reader d) { return ParseHash<ChunkIdTag>(d); }

Result<std::vector<ChunkId>> ParseChunkIds(capnp::List<capnp::Data>::Reader list) {
  std::vector<ChunkId> ids;
  ids.reserve(list.size());
  for (auto d : list) {
    Result<ChunkId> id = ParseChunkId(d);
    if (!id.ok()) return id.status();
    ids.push_back(*id);
  }
  return ids;
}

void SetChunkIds(const std::vector<ChunkId>& ids, capnp::List<capnp::Data>::Builder out) {
  for (size_t i = 0; i < ids.size(); ++i) out.set(static_cast<unsigned>(i), Raw(ids[i]));
}

}  // namespace shoal
