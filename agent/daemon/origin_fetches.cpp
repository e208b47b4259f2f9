#include "daemon/origin_fetches.h"

#include <chrono>

#include "shoal/origin_fetch.h"

namespace shoal {

OriginFetches::OriginFetches(Origin& origin, ChunkStore& store, int parallelism,
                             std::atomic<uint64_t>* streamed)
    : origin_(origin), store_(store), streamed_(streamed), workers_(parallelism) {}

OriginFetches::~OriginFetches() { workers_.Cancel(); }

void OriginFetches::Add(size_t task, uint64_t piece, const ChunkId& id, uint64_t size,
                        OriginRole role) {
  workers_.Post([this, task, piece, id, size, role] {
    auto start = std::chrono::steady_clock::now();
    ChunkWriteOptions wo;
    wo.owned = role == OriginRole::kOwner;
    Result<uint64_t> sent = FetchChunkFromOrigin(origin_, store_, id, size, wo, streamed_);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back({task, piece, role, sent.ok() ? *sent : 0, sent.status(), ms});
  });
}

}  // namespace shoal
