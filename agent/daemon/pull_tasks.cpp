#include "daemon/pull_tasks.h"

#include <set>

#include "p2p/bundle_metainfo.h"

namespace shoal {

Result<std::vector<PullTask>> PlanPull(const Manifest& m) {
  std::vector<PullTask> tasks;
  std::set<const FileEntry*> in_bundle;
  const VersionBundles placed = VersionBundles::Of(m);
  const std::vector<std::vector<const FileEntry*>>& bundles = placed.bundles;
  for (size_t k = 0; k < bundles.size(); ++k) {
    // Only the pieces are used here, which do not depend on the CA.
    auto meta = BuildBundleMetainfo(bundles[k], m.piece_size, "");
    if (!meta.ok()) return meta.status();
    PullTask b;
    b.bundle = true;
    b.bundled = bundles[k];
    b.chunks = meta->chunks;
    b.chunk_bytes = meta->piece_bytes;
    b.piece_files.resize(b.chunks.size());
    // A bundle lists its files in the manifest's order, so each piece's
    // files do too.
    for (const FileEntry* f : bundles[k]) {
      const auto index = static_cast<uint32_t>(f - m.files.data());
      b.piece_files[placed.Find(*f)->piece].push_back(index);
      in_bundle.insert(f);
    }
    b.file_count = static_cast<uint32_t>(b.chunks.size());
    b.bytes = meta->file_size;
    b.label = "bundle " + std::to_string(k + 1) + " of " + std::to_string(bundles.size()) + " (" +
              std::to_string(b.file_count) + " small files)";
    tasks.push_back(std::move(b));
  }
  std::map<PiecesRoot, size_t> by_root;
  for (uint32_t fi = 0; fi < m.files.size(); ++fi) {
    const FileEntry& f = m.files[fi];
    if (f.size == 0 || in_bundle.count(&f) != 0) continue;
    auto known = by_root.find(f.pieces_root);
    if (known != by_root.end()) {
      tasks[known->second].file_indexes.push_back(fi);
      continue;
    }
    by_root[f.pieces_root] = tasks.size();
    PullTask t;
    t.label = f.path;
    t.file = &f;
    t.file_indexes.push_back(fi);
    t.chunks = f.ChunkIds();
    for (uint64_t p = 0; p < t.chunks.size(); ++p)
      t.chunk_bytes.push_back(f.ChunkBytes(m.piece_size, p));
    t.file_count = 1;
    t.bytes = f.size;
    tasks.push_back(std::move(t));
  }
  for (PullTask& t : tasks) {
    t.written.assign(t.chunks.size(), false);
    for (uint64_t p = 0; p < t.chunks.size(); ++p) t.unwritten.push_back(p);
  }
  return tasks;
}

Result<FileTorrentId> AddTaskTorrent(TorrentEngine& engine, const PullTask& t, uint32_t piece_size,
                                     const std::string& announce_url) {
  if (!t.bundle) return engine.AddFile(*t.file, piece_size, announce_url);
  auto b = engine.AddBundle(t.bundled, piece_size, announce_url);
  if (!b.ok()) return b.status();
  if (b->chunks != t.chunks) {
    return Status::Corruption("the engine lays out " + t.label + " in another order than the pull");
  }
  return b->id;
}

bool PinHeld(ChunkStore& store, PullTask& t) {
  t.pins.resize(t.chunks.size());
  size_t pinned = 0;
  for (uint64_t p = 0; p < t.chunks.size(); ++p) {
    if (!t.pins[p].valid() && store.Contains(t.chunks[p])) {
      auto pin = store.Pin(t.chunks[p]);
      if (pin.ok()) {
        t.pins[p] = std::move(pin).value();
        t.pinned_bytes += t.chunk_bytes[p];
      }
    }
    if (t.pins[p].valid()) ++pinned;
  }
  return pinned == t.chunks.size();
}

Status WriteHeld(ChunkStore& store, TorrentEngine& engine, DestinationWriter& writer, PullTask& t) {
  std::vector<uint64_t> now_written, still;
  Status failed;
  for (size_t k = 0; k < t.unwritten.size(); ++k) {
    const uint64_t p = t.unwritten[k];
    if (!failed.ok() || !store.Contains(t.chunks[p])) {
      still.push_back(p);
      continue;
    }
    // A bundle's piece is a whole small file: the caller writes it, in a
    // batch with others, rather than hand over a descriptor for it.
    Status s = t.bundle ? writer.WriteWhole(t.FilesOf(p), t.chunks[p])
                        : writer.WritePiece(t.FilesOf(p), t.PieceInFile(p), t.chunks[p]);
    if (s.ok() && t.bundle) ++t.files_done;
    if (s.IsNotFound()) {  // evicted since: fetched again
      still.push_back(p);
      continue;
    }
    if (!s.ok()) {
      failed = s;
      still.push_back(p);
      continue;
    }
    t.written[p] = true;
    ++t.written_count;
    now_written.push_back(p);
  }
  t.unwritten = std::move(still);
  SHOAL_RETURN_IF_ERROR(failed);
  SHOAL_RETURN_IF_ERROR(writer.FlushWhole());
  t.last_scan = PullTask::Clock::now();
  if (t.written_count == t.chunks.size()) {
    if (!t.bundle) {
      SHOAL_RETURN_IF_ERROR(writer.FinishFiles(t.file_indexes));
      t.files_done = 1;
    }
    t.complete = true;
  }
  t.unskipped.insert(t.unskipped.end(), now_written.begin(), now_written.end());
  if (!t.unskipped.empty() && t.in_engine) {
    Status s = engine.SkipPieces(t.torrent, t.unskipped);
    if (s.ok()) t.unskipped.clear();
    if (!s.ok() && !s.IsUnavailable()) return s;  // while the torrent is re-added: next scan
  }
  return Status::OK();
}

}  // namespace shoal
