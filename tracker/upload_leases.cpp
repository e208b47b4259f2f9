#include "upload_leases.h"

namespace shoal::tracker {

bool UploadLeases::TryClaim(const ChunkId& id, const std::string& holder, int64_t now_ms,
                            int64_t ttl_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(id);
  if (it != leases_.end() && it->second.holder != holder && it->second.expires_ms > now_ms) {
    return false;
  }
  leases_[id] = Lease{holder, now_ms + ttl_ms};
  return true;
}

bool UploadLeases::HeldByOther(const ChunkId& id, const std::string& holder, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(id);
  return it != leases_.end() && it->second.holder != holder && it->second.expires_ms > now_ms;
}

bool UploadLeases::Held(const ChunkId& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(id);
  return it != leases_.end() && it->second.expires_ms > now_ms;
}

void UploadLeases::Release(const ChunkId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  leases_.erase(id);
}

size_t UploadLeases::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.size();
}

}  // namespace shoal::tracker
