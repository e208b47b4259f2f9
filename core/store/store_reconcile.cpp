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

#include "shoal/merkle.h"
#include "shoal/utc_time.h"
#include "store/chunk_store_impl.h"
#include "store/chunk_verify.h"

namespace shoal {

// One reconciliation's state, and its steps (numbered as above).
struct ChunkStoreImpl::Reconcile {
  struct Loaded {
    ChunkId id;
    IndexRecord record;
    bool verified;
    int64_t ctime_ns = 0;  // when verified: the file's change time then
  };

  explicit Reconcile(ChunkStoreImpl& store) : s(store) {}

  ChunkStoreImpl& s;
  std::vector<FoundChunk> files;      // sorted by id
  std::vector<bool> matched;          // files[i] has a good index record
  std::vector<Loaded> loaded;         // chunks to enter the table
  std::vector<ChunkId> drop_records;  // index records to delete

  Status ScanFiles() {
    SHOAL_RETURN_IF_ERROR(s.layout_.ScanChunks(&files, &s.counters_.open_garbage_removed));
    std::sort(files.begin(), files.end(),
              [](const FoundChunk& a, const FoundChunk& b) { return a.id < b.id; });
    matched.assign(files.size(), false);
    return Status::OK();
  }

  void DropFile(const ChunkId& id) {
    ::unlink(s.layout_.ChunkPath(id).c_str());
    ++s.counters_.corrupt_dropped;
  }

  // Steps 2 and 3: each index record against its file.
  Status MatchRecords() {
    return s.index_->ForEach([&](const ChunkId& id, const Result<IndexRecord>& r) {
      auto it =
          std::lower_bound(files.begin(), files.end(), id,
                           [](const FoundChunk& f, const ChunkId& key) { return f.id < key; });
      bool has_file = it != files.end() && it->id == id;
      if (!r.ok()) {
        drop_records.push_back(id);  // a file, if any, is re-verified below
        return;
      }
      if (!has_file) {
        drop_records.push_back(id);
        ++s.counters_.open_missing_dropped;
        return;
      }
      matched[static_cast<size_t>(it - files.begin())] = true;
      if (it->size != r->size) {
        drop_records.push_back(id);
        DropFile(id);
        return;
      }
      loaded.push_back({id, *r, s.options_.verify_on_open});
    });
  }

  // Step 5: hash every indexed file.
  void VerifyIndexed() {
    auto bad = std::remove_if(loaded.begin(), loaded.end(), [&](Loaded& c) {
      std::string path = s.layout_.ChunkPath(c.id);
      c.ctime_ns = PathChangeTimeNs(path);
      Status st = VerifyChunkPath(path, c.id, c.record.size);
      if (st.ok()) return false;
      drop_records.push_back(c.id);
      DropFile(c.id);
      return true;
    });
    loaded.erase(bad, loaded.end());
  }

  // Step 4: hash the files no good record matched; index the good ones.
  void AddUnindexed() {
    for (size_t i = 0; i < files.size(); ++i) {
      if (matched[i]) continue;
      const FoundChunk& f = files[i];
      int64_t ctime_ns = PathChangeTimeNs(s.layout_.ChunkPath(f.id));
      Status st = f.size == 0 || f.size > kMaxPieceSize
                      ? Status::Corruption("bad size")
                      : VerifyChunkPath(s.layout_.ChunkPath(f.id), f.id, f.size);
      if (!st.ok()) {
        DropFile(f.id);
        continue;
      }
      IndexRecord r;
      r.size = f.size;
      r.last_access_ms = f.mtime_ms;
      if (!s.index_->Put(f.id, r).ok()) ++s.counters_.index_errors;
      loaded.push_back({f.id, r, true, ctime_ns});
      ++s.counters_.open_unindexed_added;
    }
  }

  void DeleteDroppedRecords() {
    for (const ChunkId& id : drop_records) {
      if (!s.index_->Delete(id).ok()) ++s.counters_.index_errors;
    }
  }

  // Enters the loaded chunks in LRU order (oldest access first), then
  // trims to the capacity, which may have been lowered.
  void FillTable() {
    std::sort(loaded.begin(), loaded.end(), [](const Loaded& a, const Loaded& b) {
      return a.record.last_access_ms < b.record.last_access_ms;
    });
    std::vector<Removed> removed;
    {
      std::lock_guard<std::mutex> l(s.mu_);
      for (const Loaded& c : loaded) {
        ChunkEntry* e = s.table_.Insert(c.id, c.record.size, c.record.last_access_ms,
                                        c.record.owned, c.verified);
        e->file_ctime_ns = c.ctime_ns;
        s.used_bytes_ += c.record.size;
        if (c.record.owned) ++s.owned_chunks_;
      }
      s.last_access_flush_ms_ = NowMs();
      s.TrimLocked(0, &removed);
    }
    s.FinishRemovals(removed);
  }
};

Status ChunkStoreImpl::Init() {
  SHOAL_RETURN_IF_ERROR(layout_.CreateFolders());
  SHOAL_RETURN_IF_ERROR(layout_.ClearTemp(&counters_.open_temp_removed));
  auto index = ChunkIndex::Open(layout_.index_dir(), options_.index_cache_bytes);
  if (!index.ok()) return index.status();
  index_ = std::move(*index);

  Reconcile r(*this);
  SHOAL_RETURN_IF_ERROR(r.ScanFiles());
  SHOAL_RETURN_IF_ERROR(r.MatchRecords());
  if (options_.verify_on_open) r.VerifyIndexed();
  r.AddUnindexed();
  r.DeleteDroppedRecords();
  r.FillTable();
  return Status::OK();
}

}  // namespace shoal
