// Origin: where chunks live when no agent has them.
//
// Two implementations sit behind this interface: a folder (file_origin.h, the
// embedded default) and any S3-compatible store (s3_origin.h). Keys are
// relative, '/'-separated names such as "chunks/<hex>"; the origin's own
// prefix is added by the implementation.
//
// Thread-safety: every method may be called from many threads at once.
#ifndef SHOAL_ORIGIN_H_
#define SHOAL_ORIGIN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/byte_stream.h"
#include "shoal/chunk_id.h"
#include "shoal/origin_counters.h"
#include "shoal/origin_options.h"
#include "shoal/status.h"

namespace shoal {

struct ObjectInfo {
  std::string key;  // relative to the origin's prefix
  uint64_t size = 0;
  std::string etag;  // opaque; empty where the origin has none
};

struct ListPage {
  std::vector<ObjectInfo> objects;  // in key order
  std::string next_token;           // empty on the last page
};

class Origin {
 public:
  // Reads to the end of the object.
  static constexpr uint64_t kToEnd = UINT64_MAX;

  Origin() = default;
  virtual ~Origin() = default;
  Origin(const Origin&) = delete;
  Origin& operator=(const Origin&) = delete;

  // Streams bytes [offset, offset + length) of `key` into `sink`, in order,
  // as they arrive. A retried transfer resumes where the sink left off, so
  // the sink never sees a byte twice. NotFound if the key does not exist;
  // InvalidArgument if the range reaches past the end (unless kToEnd). A
  // zero length reads nothing and may not check that the key exists.
  virtual Status Get(const std::string& key, uint64_t offset, uint64_t length, ByteSink& sink) = 0;

  // Stores `len` bytes under `key`, replacing any object there. Readers see
  // the old object or the new one, never a mix.
  virtual Status Put(const std::string& key, const uint8_t* data, size_t len) = 0;

  // Stores everything `source` yields under `key`. Large objects go up in
  // parallel parts (S3 multipart); a failed upload leaves nothing behind.
  virtual Status PutStream(const std::string& key, ByteSource& source) = 0;

  // NotFound if the key does not exist.
  virtual Result<ObjectInfo> Head(const std::string& key) = 0;

  // Up to `max_keys` keys starting with `prefix`, after the position that
  // `continuation_token` (empty = the start) marks.
  // REQUIRES: 1 <= max_keys <= 1000.
  virtual Result<ListPage> List(const std::string& prefix, const std::string& continuation_token,
                                uint32_t max_keys) = 0;

  // Removes `key`. Deleting a missing key is OK.
  virtual Status Delete(const std::string& key) = 0;

  virtual OriginCounters counters() const = 0;

  // "s3://bucket/prefix" or "file:///path", for messages.
  virtual std::string Describe() const = 0;
};

// "chunks/<64 hex digits>": where a chunk lives in every origin.
std::string ChunkKey(const ChunkId& id);

// Uploads a chunk unless the origin already holds it. Sets *uploaded (if not
// null) to whether bytes were sent.
Status PutChunkIfAbsent(Origin& origin, const ChunkId& id, const uint8_t* data, size_t len,
                        bool* uploaded = nullptr);

// Uploads the file at `path` under `key` with PutStream.
Status PutFile(Origin& origin, const std::string& key, const std::string& path);

// Opens the origin that `options.url` names: file:// or s3://.
Result<std::unique_ptr<Origin>> OpenOrigin(const OriginOptions& options);

}  // namespace shoal

#endif  // SHOAL_ORIGIN_H_
