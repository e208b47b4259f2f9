// Cap'n Proto messages as byte strings, for LevelDB values.
#ifndef SHOAL_TRACKER_CAPNP_BYTES_H_
#define SHOAL_TRACKER_CAPNP_BYTES_H_

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal::tracker {

// The flat (segment-table-prefixed) encoding of a builder's message.
inline std::string ToBytes(capnp::MessageBuilder& builder) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(builder);
  return std::string(reinterpret_cast<const char*>(words.asBytes().begin()),
                     words.asBytes().size());
}

// `record` filled into a fresh `Schema` message by `fill`, as flat bytes.
template <typename Schema, typename T, typename Fill>
std::string RecordBytes(const T& record, Fill fill) {
  capnp::MallocMessageBuilder builder;
  fill(record, builder.initRoot<Schema>());
  return ToBytes(builder);
}

// Holds an aligned copy of flat bytes and reads a message from it.
// Throws kj::Exception on malformed bytes; the registry only reads what it
// wrote itself.
class BytesReader {
 public:
  explicit BytesReader(std::string_view bytes)
      : words_(kj::heapArray<capnp::word>((bytes.size() + 7) / 8)) {
    std::memcpy(words_.begin(), bytes.data(), bytes.size());
    reader_.emplace(words_.asPtr());
  }
  template <typename T>
  typename T::Reader root() {
    return reader_->getRoot<T>();
  }

 private:
  kj::Array<capnp::word> words_;
  std::optional<capnp::FlatArrayMessageReader> reader_;
};

// Reads the registry record `bytes` (stored under `key`) as a `Schema` with
// `read` (a record_codec.h Read: Schema::Reader -> Result<T>); one that does
// not read back is Corruption naming its key.
template <typename Schema, typename Read>
auto DecodeRecord(const std::string& key, const std::string& bytes, Read read)
    -> decltype(read(BytesReader("").root<Schema>())) {
  using Out = decltype(read(BytesReader("").root<Schema>()));
  try {
    BytesReader br(bytes);
    auto record = read(br.root<Schema>());
    if (record.ok()) return record;
    return Out(Status::Corruption("registry record " + key + ": " + record.status().message()));
  } catch (const kj::Exception& e) {
    return Out(Status::Corruption("registry record " + key + ": " + e.getDescription().cStr()));
  }
}

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_CAPNP_BYTES_H_
