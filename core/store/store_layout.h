// Where a chunk store keeps things inside its folder:
//
//   <dir>/chunks/ab/cd/abcd...   one file per chunk, named by its hex ID,
//                                fanned out by the first two bytes so no
//                                folder holds more than a few thousand files
//   <dir>/tmp/                   writes in progress and files being deleted;
//                                emptied at every open
//   <dir>/index/                 the LevelDB index (chunk_index.h)
//
// Thread-safety: all methods may be called concurrently.
#ifndef SHOAL_CORE_STORE_LAYOUT_H_
#define SHOAL_CORE_STORE_LAYOUT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/status.h"

namespace shoal {

// A chunk file found by a scan.
struct FoundChunk {
  ChunkId id;
  uint64_t size = 0;
  int64_t mtime_ms = 0;
};

class StoreLayout {
 public:
  explicit StoreLayout(std::string dir);

  const std::string& dir() const { return dir_; }
  const std::string& chunks_dir() const { return chunks_dir_; }
  const std::string& tmp_dir() const { return tmp_dir_; }
  const std::string& index_dir() const { return index_dir_; }

  std::string ChunkFolder(const ChunkId& id) const;
  std::string ChunkPath(const ChunkId& id) const;
  // A fresh, unused path under tmp/ for `id`; `kind` ends the name
  // ("write", "evict") so a stray file says where it came from.
  std::string NewTempPath(const ChunkId& id, const char* kind) const;

  // Creates dir, chunks/ and tmp/ if missing.
  Status CreateFolders() const;
  // Deletes everything in tmp/; adds the number of files removed.
  Status ClearTemp(uint64_t* removed) const;
  // Lists the chunk files under chunks/. A file whose name or place is not
  // a chunk's is removed, as nothing but the store writes there; those are
  // added to *removed.
  Status ScanChunks(std::vector<FoundChunk>* found, uint64_t* removed) const;

 private:
  const std::string dir_;
  const std::string chunks_dir_;
  const std::string tmp_dir_;
  const std::string index_dir_;
  mutable std::atomic<uint64_t> temp_seq_{0};
};

}  // namespace shoal

#endif  // SHOAL_CORE_STORE_LAYOUT_H_
