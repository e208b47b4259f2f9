#include "read/read_slots.h"

namespace shoal {

std::shared_ptr<const void> ReadSlots::TryTake(const std::string& token) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t& reads = in_flight_[token];
    if (reads >= max_per_token_) return nullptr;
    ++reads;
  }
  // The deleter keeps the slots alive as long as any slot is out.
  std::shared_ptr<ReadSlots> self = shared_from_this();
  return std::shared_ptr<const void>(reinterpret_cast<const void*>(1),
                                     [self, token](const void*) { self->Release(token); });
}

void ReadSlots::Release(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find(token);
  if (it != in_flight_.end() && --it->second == 0) in_flight_.erase(it);
}

}  // namespace shoal
