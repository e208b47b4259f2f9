// ChunkUploader: uploads a checkpoint's chunks to the origin from the
// files they come from, several at a time, skipping any the origin holds.
//
// Thread-safety: Run() is called once; `on_done` is called from worker
// threads, one call at a time.
#ifndef SHOAL_AGENT_CLI_CHUNK_UPLOADER_H_
#define SHOAL_AGENT_CLI_CHUNK_UPLOADER_H_

#include <atomic>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/manifest.h"
#include "shoal/origin.h"

namespace shoal {

// Where a chunk's bytes are on disk.
struct ChunkSource {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Every distinct chunk of `m`, located in the folder `dir`.
std::unordered_map<ChunkId, ChunkSource> LocateChunks(const Manifest& m, const std::string& dir);

struct UploadStats {
  std::atomic<uint64_t> uploaded_chunks{0};
  std::atomic<uint64_t> uploaded_bytes{0};
  std::atomic<uint64_t> skipped_chunks{0};  // already in the origin
  std::atomic<uint64_t> done_bytes{0};      // uploaded or skipped, for progress
};

// Uploads `ids` with `parallelism` workers. Each chunk is re-hashed from
// disk first, so a file changed since hashing fails the upload instead of
// putting wrong bytes under a chunk's name. Stops at the first error.
Status UploadChunks(Origin& origin, const std::vector<ChunkId>& ids,
                    const std::unordered_map<ChunkId, ChunkSource>& sources, int parallelism,
                    UploadStats* stats, const std::function<void(const ChunkId&)>& on_done);

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_CHUNK_UPLOADER_H_
