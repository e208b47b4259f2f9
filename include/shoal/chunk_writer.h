// ChunkWriter: one chunk being written into a ChunkStore, block by block.
//
// Blocks are 16 KiB and may arrive in any order, as they do from BitTorrent
// peers; each is hashed as it is written and its hash kept, so Commit()
// never reads the file back. Space was reserved by ChunkStore::BeginWrite.
// A writer destroyed before a successful Commit() aborts: its temporary file
// is deleted and its reservation released.
//
// Thread-safety: WriteAt may be called from several threads at once for
// different blocks. Commit and Abort must not race with anything else on the
// same writer. REQUIRES: destroyed before its store.
#ifndef SHOAL_CHUNK_WRITER_H_
#define SHOAL_CHUNK_WRITER_H_

#include <cstddef>
#include <cstdint>

#include "shoal/chunk_id.h"
#include "shoal/hash256.h"
#include "shoal/status.h"

namespace shoal {

class ChunkWriter {
 public:
  virtual ~ChunkWriter() = default;

  virtual const ChunkId& id() const = 0;
  virtual uint64_t size() const = 0;

  // Writes whole blocks starting at `offset`. A block written twice keeps
  // the later bytes. REQUIRES: offset is a multiple of 16 KiB; offset + len
  // <= size(); len is a multiple of 16 KiB or reaches size().
  virtual Status WriteAt(uint64_t offset, const uint8_t* data, size_t len) = 0;

  // The SHA-256 of block `index` once written (NotFound before), for a
  // BitTorrent v2 hash request.
  virtual Result<Digest> BlockHash(uint64_t index) const = 0;
  // Number of distinct blocks written so far.
  virtual uint64_t blocks_written() const = 0;

  // Verifies the blocks against the ID, fsyncs, renames the file into place
  // and indexes it. InvalidArgument if blocks are missing; Corruption if the
  // bytes do not match the ID, in which case the writer stays open so bad
  // blocks can be written again. After OK the writer is finished.
  virtual Status Commit() = 0;

  // Deletes the temporary file and releases the reservation. Idempotent.
  virtual void Abort() = 0;
};

}  // namespace shoal

#endif  // SHOAL_CHUNK_WRITER_H_
