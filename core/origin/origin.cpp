// The helpers every Origin user shares, and the factory that picks an
// implementation from the URL.
#include "shoal/origin.h"

#include "shoal/file_origin.h"
#include "shoal/s3_origin.h"

namespace shoal {

std::string ChunkKey(const ChunkId& id) { return "chunks/" + id.ToHex(); }

Status PutChunkIfAbsent(Origin& origin, const ChunkId& id, const uint8_t* data, size_t len,
                        bool* uploaded) {
  if (uploaded) *uploaded = false;
  const std::string key = ChunkKey(id);
  Result<ObjectInfo> head = origin.Head(key);
  if (head.ok()) {
    if (head->size == len) return Status::OK();
    // A chunk's bytes are fixed by its ID, so a size mismatch is a torn or
    // foreign object: replace it.
  } else if (!head.status().IsNotFound()) {
    return head.status();
  }
  SHOAL_RETURN_IF_ERROR(origin.Put(key, data, len));
  if (uploaded) *uploaded = true;
  return Status::OK();
}

Status PutFile(Origin& origin, const std::string& key, const std::string& path) {
  Result<std::unique_ptr<FileSource>> source = FileSource::Open(path);
  if (!source.ok()) return source.status();
  return origin.PutStream(key, **source);
}

Result<std::unique_ptr<Origin>> OpenOrigin(const OriginOptions& options) {
  SHOAL_RETURN_IF_ERROR(options.Validate());
  if (options.url.rfind("file://", 0) == 0) return NewFileOrigin(options.url.substr(7));
  Result<std::unique_ptr<S3Origin>> s3 = NewS3Origin(options);
  if (!s3.ok()) return s3.status();
  return std::unique_ptr<Origin>(std::move(s3).value());
}

}  // namespace shoal
