// IngestFiles: reads files from an ImportSource once, as streams, and hashes
// them on the way: each piece's BEP 52 root (its chunk ID), each file's
// pieces root and its SHA-256. Every piece goes to a sink as soon as it is
// hashed, so a caller can upload it from the same buffer; nothing is
// staged on disk.
//
// Files, and the pieces of large files, are read concurrently: each worker
// reads one piece with a ranged read (or a whole file, in order, from a
// source that cannot read ranges). A file's SHA-256 takes its pieces in
// order; a piece that arrives early waits for the ones before it, so
// memory stays at about `parallel` pieces plus what the sink keeps.
//
// A file whose size or SHA-256 disagrees with what the source declared,
// and a source that stops mid-file, fail the whole ingest with one message
// naming the file.
#ifndef SHOAL_AGENT_IMPORT_FILE_INGEST_H_
#define SHOAL_AGENT_IMPORT_FILE_INGEST_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "import/import_source.h"
#include "shoal/piece_hasher.h"

namespace shoal {

struct IngestedFile {
  FileHashes hashes;
  Digest sha256;
};

struct IngestOptions {
  uint32_t piece_size = kDefaultPieceSize;
  int parallel = 8;  // pieces (or whole files) read at once
  // Each piece once hashed, from the worker that read it; may block (for
  // upload room, say). HashedPiece::path points at the file's SourceFile path.
  PieceSink on_piece;
  // Bytes read so far, from any worker; called after each piece.
  std::function<void(uint64_t bytes)> on_progress;
  // Each file once read whole and checked (its index in `files`), from the
  // worker that read its last piece: a caller can remember it at once.
  std::function<void(size_t index, const IngestedFile& file)> on_file;
};

// Reads and hashes `files` (indexes into the result match). Stops at the
// first error; pieces already handed to the sink stay handed.
Result<std::vector<IngestedFile>> IngestFiles(ImportSource& source,
                                              const std::vector<SourceFile>& files,
                                              const IngestOptions& options);

}  // namespace shoal

#endif  // SHOAL_AGENT_IMPORT_FILE_INGEST_H_
