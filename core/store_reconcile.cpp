// ChunkStoreImpl::Init: bring the index and the chunk files back into
// agreement after whatever happened since the last close.
//
// Every step is safe to repeat, so a crash during open is handled by the
// next open:
//  1. delete everything in tmp/ (writes never committed, evicted files);
//  2. drop index records whose file is gone;
//  3. drop chunks whose file size disagrees with the record (no file is
//     ever changed in place, so that is damage), counting them as corrupt;
//  4. hash files that have no record; index the good, delete the bad;
//  5. with verify_on_open, hash every indexed file too.
#include <unistd.h>

#include <algorithm>

#include "chunk_store_impl.h"
#include "chunk_verify.h"
#include "shoal/merkle.h"
#include "shoal/utc_time.h"

namespace shoal {

Status ChunkStoreImpl::Init() {
  SHOAL_RETURN_IF_ERROR(layout_.CreateFolders());
  SHOAL_RETURN_IF_ERROR(layout_.ClearTemp(&counters_.open_temp_removed));
  auto index = ChunkIndex::Open(layout_.index_dir(), options_.index_cache_bytes);
  if (!index.ok()) return index.status();
  index_ = std::move(*index);

  std::vector<FoundChunk> files;
  SHOAL_RETURN_IF_ERROR(layout_.ScanChunks(&files, &counters_.open_garbage_removed));
  std::sort(files.begin(), files.end(),
            [](const FoundChunk& a, const FoundChunk& b) { return a.id < b.id; });
  std::vector<bool> matched(files.size(), false);

  struct Loaded {
    ChunkId id;
    IndexRecord record;
    bool verified;
    int64_t ctime_ns = 0;  // when verified: the file's change time then
  };
  std::vector<Loaded> loaded;
  std::vector<ChunkId> drop_records;
  auto drop_file = [&](const ChunkId& id) {
    ::unlink(layout_.ChunkPath(id).c_str());
    ++counters_.corrupt_dropped;
  };
  SHOAL_RETURN_IF_ERROR(index_->ForEach([&](const ChunkId& id, const Result<IndexRecord>& r) {
    auto it = std::lower_bound(files.begin(), files.end(), id,
                               [](const FoundChunk& f, const ChunkId& key) { return f.id < key; });
    bool has_file = it != files.end() && it->id == id;
    if (!r.ok()) {
      drop_records.push_back(id);  // a file, if any, is re-verified below
      return;
    }
    if (!has_file) {
      drop_records.push_back(id);
      ++counters_.open_missing_dropped;
      return;
    }
    matched[static_cast<size_t>(it - files.begin())] = true;
    if (it->size != r->size) {
      drop_records.push_back(id);
      drop_file(id);
      return;
    }
    loaded.push_back({id, *r, options_.verify_on_open});
  }));

  if (options_.verify_on_open) {
    auto bad = std::remove_if(loaded.begin(), loaded.end(), [&](Loaded& c) {
      std::string path = layout_.ChunkPath(c.id);
      c.ctime_ns = PathChangeTimeNs(path);
      Status s = VerifyChunkPath(path, c.id, c.record.size);
      if (s.ok()) return false;
      drop_records.push_back(c.id);
      drop_file(c.id);
      return true;
    });
    loaded.erase(bad, loaded.end());
  }

  for (size_t i = 0; i < files.size(); ++i) {
    if (matched[i]) continue;
    const FoundChunk& f = files[i];
    int64_t ctime_ns = PathChangeTimeNs(layout_.ChunkPath(f.id));
    Status s = f.size == 0 || f.size > kMaxPieceSize
                   ? Status::Corruption("bad size")
                   : VerifyChunkPath(layout_.ChunkPath(f.id), f.id, f.size);
    if (!s.ok()) {
      drop_file(f.id);
      continue;
    }
    IndexRecord r;
    r.size = f.size;
    r.last_access_ms = f.mtime_ms;
    if (!index_->Put(f.id, r).ok()) ++counters_.index_errors;
    loaded.push_back({f.id, r, true, ctime_ns});
    ++counters_.open_unindexed_added;
  }
  for (const ChunkId& id : drop_records) {
    if (!index_->Delete(id).ok()) ++counters_.index_errors;
  }

  // Rebuild LRU order: oldest access first.
  std::sort(loaded.begin(), loaded.end(), [](const Loaded& a, const Loaded& b) {
    return a.record.last_access_ms < b.record.last_access_ms;
  });
  std::vector<Removed> removed;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const Loaded& c : loaded) {
      ChunkEntry* e =
          table_.Insert(c.id, c.record.size, c.record.last_access_ms, c.record.owned, c.verified);
      e->file_ctime_ns = c.ctime_ns;
      used_bytes_ += c.record.size;
      if (c.record.owned) ++owned_chunks_;
    }
    last_access_flush_ms_ = NowMs();
    TrimLocked(0, &removed);  // the capacity may have been lowered
  }
  FinishRemovals(removed);
  return Status::OK();
}

}  // namespace shoal
