#include "daemon/origin_ledger.h"

#include <algorithm>

namespace shoal {

OriginLedger::Watch::Watch(OriginLedger& ledger, std::unordered_set<ChunkId> wanted)
    : ledger_(ledger), wanted_(std::move(wanted)) {}

OriginLedger::Watch::~Watch() {
  std::lock_guard<std::mutex> lock(ledger_.mu_);
  auto& w = ledger_.watches_;
  w.erase(std::remove(w.begin(), w.end(), this), w.end());
}

uint64_t OriginLedger::Watch::bytes() const {
  std::lock_guard<std::mutex> lock(ledger_.mu_);
  return bytes_;
}

std::unique_ptr<OriginLedger::Watch> OriginLedger::Start(const std::vector<ChunkId>& chunks) {
  std::unique_ptr<Watch> watch(
      new Watch(*this, std::unordered_set<ChunkId>(chunks.begin(), chunks.end())));
  std::lock_guard<std::mutex> lock(mu_);
  watches_.push_back(watch.get());
  return watch;
}

void OriginLedger::Record(const ChunkId& chunk, uint64_t bytes) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (Watch* w : watches_) {
    if (w->wanted_.erase(chunk) != 0) w->bytes_ += bytes;
  }
}

}  // namespace shoal
