// PullTask: what one pull waits for from one torrent, and how its pieces
// reach the caller's files.
//
// A version's small files (no larger than one piece) share a few torrents,
// its bundles (shoal/file_torrent_info.h), one task each: a bundle's piece
// p is the whole of every manifest file whose pieces root is chunks[p]. Every larger distinct file
// is a task of its own, over its canonical torrent: piece p is piece p of each manifest file with
// that content. Either way a piece goes to the caller through
// DestinationWriter::WritePiece(FilesOf(p), PieceInFile(p), chunks[p]).
//
// Thread-safety: a task belongs to one pull job.
#ifndef SHOAL_AGENT_DAEMON_PULL_TASKS_H_
#define SHOAL_AGENT_DAEMON_PULL_TASKS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/destination_writer.h"
#include "p2p/torrent_engine.h"
#include "shoal/chunk_store.h"
#include "shoal/manifest.h"
#include "shoal/pin_handle.h"
#include "shoal/status.h"

namespace shoal {

struct PullTask {
  using Clock = std::chrono::steady_clock;

  // Constant after PlanPull.
  std::string label;  // a path, or "bundle K of N (M small files)"
  bool bundle = false;
  const FileEntry* file = nullptr;        // a file's task: the first file with its content
  std::vector<const FileEntry*> bundled;  // a bundle's: its small files
  std::vector<uint32_t> file_indexes;     // a file's task: the manifest's files with its content
  std::vector<std::vector<uint32_t>> piece_files;  // a bundle's: the manifest's files of each piece
  std::vector<ChunkId> chunks;                     // per piece
  std::vector<uint64_t> chunk_bytes;               // per piece
  uint32_t file_count = 0;                         // distinct files
  uint64_t bytes = 0;                              // distinct bytes

  const std::vector<uint32_t>& FilesOf(uint64_t piece) const {
    return bundle ? piece_files[piece] : file_indexes;
  }
  uint64_t PieceInFile(uint64_t piece) const { return bundle ? 0 : piece; }

  // The pull's progress on it.
  FileTorrentId torrent;
  bool in_engine = false;
  bool complete = false;
  uint64_t from_peers = 0;
  std::map<uint64_t, Clock::time_point> announced;  // last hand-over to the engine of a piece
  std::map<uint64_t, Clock::time_point> asked;      // last asked of the tracker
  // Into the cache only: per piece, held until the pull ends, so nothing
  // it has is evicted.
  std::vector<PinHandle> pins;
  uint64_t pinned_bytes = 0;
  uint64_t pinned_at_have = ~0ull;  // the engine's piece count at the last PinHeld
  // Into a destination: pieces written out, which the cache may then evict.
  std::vector<bool> written;
  std::vector<uint64_t> unwritten;  // the pieces not written yet, in order
  uint64_t written_count = 0;
  std::vector<uint64_t>
      unskipped;            // written, not yet marked skipped (the torrent was being re-added)
  uint32_t files_done = 0;  // distinct files whole in the destination
  uint64_t scanned_at_have = ~0ull;  // the engine's piece count at the last scan
  Clock::time_point last_scan;
};

// The tasks of `m`: one per bundle of its small files first, if it has
// any, then one per distinct larger file. Empty files need none.
// InvalidArgument if the manifest's small files do not form bundles.
Result<std::vector<PullTask>> PlanPull(const Manifest& m);

// Adds `t`'s torrent to the engine (its bundle, or its file's).
Result<FileTorrentId> AddTaskTorrent(TorrentEngine& engine, const PullTask& t, uint32_t piece_size,
                                     const std::string& announce_url);

// Pins the chunks of `t` the store holds that are not pinned yet. Returns
// whether every chunk of the task is pinned.
bool PinHeld(ChunkStore& store, PullTask& t);

// Writes out every piece of `t` the store holds that is not written yet,
// finishes the files that are then whole (a bundle's small files are
// written whole by the caller, in batches), and
// tells the engine not to download those pieces again. Looks only at
// unwritten pieces.
Status WriteHeld(ChunkStore& store, TorrentEngine& engine, DestinationWriter& writer, PullTask& t);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_PULL_TASKS_H_
