// Fetching one chunk from the origin straight into the chunk store.
#ifndef SHOAL_ORIGIN_FETCH_H_
#define SHOAL_ORIGIN_FETCH_H_

#include <cstdint>

#include "shoal/chunk_id.h"
#include "shoal/chunk_store.h"
#include "shoal/origin.h"

namespace shoal {

// GETs chunks/<id> and streams it into the store through a ChunkWriter, so
// nothing is held in memory whole and the chunk is verified against `id`
// before it becomes visible. A chunk of the wrong size or content is refused
// as Corruption, naming the origin. Thread-safe.
Status FetchChunkFromOrigin(Origin& origin, ChunkStore& store, const ChunkId& id, uint64_t size);

}  // namespace shoal

#endif  // SHOAL_ORIGIN_FETCH_H_
