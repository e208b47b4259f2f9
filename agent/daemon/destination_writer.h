// DestinationWriter: writes a pull's chunks into the caller's files as they
// arrive.
//
// Each chunk is copied out of the cache once it is there, into every file of
// the version that holds it (identical files share chunks), and then the
// pull no longer needs it: the cache is a window onto the version, not a
// bound on its size. Only the destination's free space bounds a pull.
//
// Thread-safety: not thread-safe; one per pull job.
#ifndef SHOAL_AGENT_DAEMON_DESTINATION_WRITER_H_
#define SHOAL_AGENT_DAEMON_DESTINATION_WRITER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/caller_files.h"
#include "shoal/chunk_store.h"
#include "shoal/manifest.h"
#include "shoal/status.h"

namespace shoal {

class DestinationWriter {
 public:
  // `dest` and `store` must outlive the writer; `label` names the
  // destination in errors.
  DestinationWriter(ChunkStore& store, PullDestination& dest, const Manifest& m, std::string label);
  ~DestinationWriter();
  DestinationWriter(const DestinationWriter&) = delete;
  DestinationWriter& operator=(const DestinationWriter&) = delete;

  // Has the caller lay out the version's folders and (empty) files.
  Status Prepare();

  // Copies `chunk`, piece `piece` of a file, into each of the manifest's
  // files `file_indexes` (which share its content). NotFound if the cache
  // no longer holds the chunk (it was evicted since it was seen: fetch it
  // again); NoSpace if the destination is full.
  Status WritePiece(const std::vector<uint32_t>& file_indexes, uint64_t piece,
                    const ChunkId& chunk);

  // Syncs and closes the files `file_indexes`, all of whose pieces are
  // written.
  Status FinishFiles(const std::vector<uint32_t>& file_indexes);

  // Has the caller write `chunk`, a whole small file, as each of the files
  // `file_indexes`. Files are sent in batches (PullDestination::WriteFiles):
  // this may only queue them, and FlushWhole sends what is queued. Errors
  // as for WritePiece, for this call's files or earlier queued ones.
  Status WriteWhole(const std::vector<uint32_t>& file_indexes, const ChunkId& chunk);
  // Sends the files WriteWhole queued.
  Status FlushWhole();

  uint64_t bytes_written() const { return bytes_written_; }

 private:
  Result<int> Fd(uint32_t index);

  ChunkStore& store_;
  PullDestination& dest_;
  const Manifest& manifest_;
  const std::string label_;
  // Open files at once, at most; past it, files are opened one at a time.
  static constexpr size_t kMaxOpenFiles = 512;
  std::map<uint32_t, int> fds_;                    // open files, by manifest index
  std::set<uint32_t> finished_;                    // all written: never opened again
  std::vector<PullDestination::WholeFile> whole_;  // queued by WriteWhole
  size_t whole_bytes_ = 0;
  uint64_t bytes_written_ = 0;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_DESTINATION_WRITER_H_
