// The JSON view of a manifest, through Cap'n Proto's JsonCodec: field names
// come from the schema, and hashes are hex through its $Json.hex annotations.
#include <capnp/compat/json.h>
#include <capnp/message.h>

#include <cassert>
#include <cstring>

#include "shoal/manifest_codec.h"
#include "shoal/proto/manifest.capnp.h"

namespace shoal {

std::string ManifestToJson(const Manifest& m, const VersionId& id) {
  Result<std::string> bytes = EncodeManifest(m);
  assert(bytes.ok() && "ManifestToJson requires a valid manifest");
  auto words = kj::heapArray<capnp::word>(bytes->size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes->data(), bytes->size());
  kj::ArrayPtr<const capnp::word> segments[1] = {words.asPtr()};
  capnp::SegmentArrayMessageReader reader(kj::arrayPtr(segments, 1));

  capnp::JsonCodec codec;
  codec.handleByAnnotation<proto::Manifest>();
  codec.setPrettyPrint(true);
  kj::String body = codec.encode(reader.getRoot<proto::Manifest>());
  return "{\"versionId\": \"" + id.ToHex() + "\",\n\"manifest\": " + body.cStr() + "}\n";
}

}  // namespace shoal
