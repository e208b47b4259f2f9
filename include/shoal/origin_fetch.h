// Fetching one chunk from the origin straight into the chunk store.
#ifndef SHOAL_ORIGIN_FETCH_H_
#define SHOAL_ORIGIN_FETCH_H_

#include <atomic>
#include <cstdint>

#include "shoal/chunk_id.h"
#include "shoal/chunk_store.h"
#include "shoal/origin.h"
#include "shoal/status.h"

namespace shoal {

// GETs chunks/<id> and streams it into the store through a ChunkWriter, so
// nothing is held in memory whole and the chunk is verified against `id`
// before it becomes visible. Returns the bytes the origin sent: `size`, or 0
// if the store already held the chunk (nothing is fetched then). A chunk of
// the wrong size or content is refused as Corruption, naming the origin.
// One chunk is fetched into one store once at a time: a second call for it
// waits for the first, and fetches only if the first failed.
// An owner passes wo.owned: the chunk commits owned, so a full cache does not
// take it first among the unowned ones before the owner hands it over.
// `streamed`, if given, counts each byte as it arrives, before the chunk
// is whole (the tracker sees an owner's slow fetch still moving by it).
// Thread-safe.
Result<uint64_t> FetchChunkFromOrigin(Origin& origin, ChunkStore& store, const ChunkId& id,
                                      uint64_t size,
                                      const ChunkWriteOptions& wo = ChunkWriteOptions(),
                                      std::atomic<uint64_t>* streamed = nullptr);

}  // namespace shoal

#endif  // SHOAL_ORIGIN_FETCH_H_
