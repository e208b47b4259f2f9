// Piece hashing as in BitTorrent v2 (BEP 52): every file's piece layer and
// pieces root, computed in parallel across files and pieces.
//
// Files are read with large sequential preads into per-thread buffers, so
// memory stays at about threads x read_size whatever the file sizes.
#ifndef SHOAL_PIECE_HASHER_H_
#define SHOAL_PIECE_HASHER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/pieces_root.h"
#include "shoal/status.h"

namespace shoal {

constexpr uint32_t kDefaultPieceSize = 16u << 20;

// A piece just hashed, with its bytes, as HashOptions::on_piece sees it.
struct HashedPiece {
  const std::string* path;      // the file, as given to HashFiles
  uint64_t offset = 0;          // of the piece in the file
  ChunkId id;                   // the piece's chunk ID (as FileChunkIds gives it)
  std::vector<uint8_t>* bytes;  // the piece; a sink may swap them out to keep them
};

// Called from worker threads, several at a time, once per piece hashed.
using PieceSink = std::function<void(HashedPiece& piece)>;

struct HashOptions {
  uint32_t piece_size = kDefaultPieceSize;  // bytes; a power of two in [16 KiB, 64 MiB]
  int threads = 0;                          // worker threads; 0 = one per core
  uint32_t read_size = 1u << 20;            // bytes per pread; a multiple of 16 KiB
  // When set, each worker reads a whole piece into one buffer (memory is
  // then threads x piece_size) and hands it here after hashing it, so a
  // caller can use the bytes without reading the file again.
  PieceSink on_piece;

  Status Validate() const;
};

struct FileHashes {
  uint64_t size = 0;
  PiecesRoot pieces_root;            // all zeros for an empty file
  std::vector<ChunkId> piece_layer;  // one per piece; empty when size <= piece_size
};

// Bytes hashed so far across all files, and the total to hash. Called from
// worker threads, one at a time, after each task of up to 16 MiB.
using HashProgress = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

// Hashes every file in `paths`. The result has one entry per path, in order.
// Fails with IOError if a file cannot be read or shrinks while being hashed.
Result<std::vector<FileHashes>> HashFiles(const std::vector<std::string>& paths,
                                          const HashOptions& options,
                                          const HashProgress& progress = {});

// Hashes an in-memory file. REQUIRES: piece_size is valid.
FileHashes HashBuffer(const uint8_t* data, uint64_t len, uint32_t piece_size);

// The root of one piece's 16 KiB block hashes: the chunk ID of the bytes
// [offset, offset + len) of a file. A piece that is the whole file (offset
// 0, len <= piece_size) is padded to the next power of two of its blocks;
// every other piece, the last one included, to piece_size / 16 KiB.
// For callers that see a file piece by piece, in any order, such as a
// stream. REQUIRES: piece_size is valid, 0 < len <= piece_size.
Digest PieceRoot(const uint8_t* data, size_t len, uint64_t offset, uint32_t piece_size);

// A file's hashes from its piece roots, one per piece in order (none for an
// empty file). REQUIRES: roots.size() == ceil(size / piece_size).
FileHashes FileHashesFromRoots(uint64_t size, std::vector<Digest> roots, uint32_t piece_size);

// The IDs of a file's chunks, in order: the piece layer, or the pieces root
// alone for a file of one piece, or nothing for an empty file.
std::vector<ChunkId> FileChunkIds(const FileHashes& file);

// The pieces root that a piece layer hashes up to.
PiecesRoot PiecesRootFromLayer(const std::vector<ChunkId>& layer, uint32_t piece_size);

// Validates a piece size: a power of two in [16 KiB, 64 MiB].
Status ValidatePieceSize(uint64_t piece_size);

}  // namespace shoal

#endif  // SHOAL_PIECE_HASHER_H_
