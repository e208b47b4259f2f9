#include "daemon/origin_fetches.h"

namespace shoal {

OriginFetches::OriginFetches(ChunkFetcher& fetcher, int parallelism,
                             std::atomic<uint64_t>* streamed)
    : streamed_(streamed), lane_(fetcher.NewLane(parallelism)) {}

OriginFetches::~OriginFetches() { lane_.reset(); }

void OriginFetches::Add(size_t task, uint64_t piece, const ChunkId& id, uint64_t size,
                        OriginRole role, const PieceAt& seed) {
  ChunkFetch fetch;
  fetch.id = id;
  fetch.size = size;
  fetch.owned = role == OriginRole::kOwner;
  fetch.streamed = streamed_;
  fetch.seed = seed;
  lane_->Fetch(fetch, [this, task, piece, role](const ChunkFetched& f) {
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back({task, piece, role, f.bytes, f.status, f.ms});
  });
}

}  // namespace shoal
