// Cap'n Proto records as JSON, the form the tracker's HTTP view and the
// CLI's --json print: fields by their schema names, IDs as hex where the
// schema says so ($Json.hex).
#ifndef SHOAL_PROTO_JSON_RECORDS_H_
#define SHOAL_PROTO_JSON_RECORDS_H_

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include <string>
#include <vector>

namespace shoal {

// One record as a JSON object.
template <typename Reader>
std::string ToJson(Reader r) {
  capnp::JsonCodec codec;
  codec.handleByAnnotation<typename Reader::Reads>();
  return codec.encode(r).cStr();
}

// A JSON array of `records`, each filled into a `Schema` by `fill`.
template <typename Schema, typename T, typename Fill>
std::string JsonArray(const std::vector<T>& records, Fill fill) {
  std::string out = "[";
  for (const T& r : records) {
    capnp::MallocMessageBuilder b;
    auto o = b.initRoot<Schema>();
    fill(r, o);
    if (out.size() > 1) out += ",";
    out += ToJson(o.asReader());
  }
  return out + "]";
}

}  // namespace shoal

#endif  // SHOAL_PROTO_JSON_RECORDS_H_
