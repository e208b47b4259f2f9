// Decoding JSON into Cap'n Proto structs, the twin of json_records.h: what
// hubs and registries answer (proto/hub.capnp, proto/oci.capnp) and what
// the hub's clients send. Field names come from the schema, fields it does
// not name are ignored, and malformed JSON is one Corruption naming `what`.
#ifndef SHOAL_PROTO_JSON_DECODE_H_
#define SHOAL_PROTO_JSON_DECODE_H_

#include <capnp/compat/json.h>
#include <capnp/message.h>
#include <kj/exception.h>

#include <string>

#include "shoal/status.h"

namespace shoal {

inline std::string Str(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }

// Decodes `json` as T and calls use(T::Reader), returning its Status.
template <typename T, typename Fn>
Status DecodeJson(const std::string& json, const std::string& what, Fn&& use) {
  Status out;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 capnp::JsonCodec codec;
                 codec.handleByAnnotation<T>();
                 capnp::MallocMessageBuilder message;
                 auto root = message.initRoot<T>();
                 codec.decode(kj::StringPtr(json.c_str()), root);
                 out = use(root.asReader());
               })) {
    return Status::Corruption(what + " is not the JSON expected: " +
                              std::string(e->getDescription().cStr()).substr(0, 160));
  }
  return out;
}

}  // namespace shoal

#endif  // SHOAL_PROTO_JSON_DECODE_H_
