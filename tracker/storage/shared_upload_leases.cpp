// The shared kind of UploadLeases (upload_leases.h): the registry holds the
// leases; this object remembers only which it claimed, for held_here().
#include <mutex>
#include <unordered_map>

#include "registry/registry_store.h"
#include "storage/upload_leases.h"

namespace shoal::tracker {
namespace {

class SharedUploadLeases final : public UploadLeases {
 public:
  explicit SharedUploadLeases(RegistryStore& store) : store_(store) {}

  Result<std::vector<bool>> Claim(const std::vector<ChunkId>& ids, const std::string& holder,
                                  int64_t now_ms, int64_t ttl_ms) override {
    Result<std::vector<bool>> held = store_.ClaimUploads(ids, holder, now_ms, ttl_ms);
    if (!held.ok()) return held;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = mine_.begin(); it != mine_.end();) {
      it = it->second <= now_ms ? mine_.erase(it) : std::next(it);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if ((*held)[i]) mine_[ids[i]] = now_ms + ttl_ms;
    }
    return held;
  }

  Status Release(const std::vector<ChunkId>& ids) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const ChunkId& id : ids) mine_.erase(id);
    }
    return store_.ReleaseUploads(ids);
  }

  Result<std::unordered_set<ChunkId>> Leased(int64_t now_ms, bool drop_expired) override {
    return store_.LeasedUploads(now_ms, drop_expired);
  }

  size_t held_here(int64_t now_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [id, expires_ms] : mine_) n += expires_ms > now_ms ? 1 : 0;
    return n;
  }

 private:
  RegistryStore& store_;
  std::mutex mu_;
  std::unordered_map<ChunkId, int64_t> mine_;  // claimed here: expiry ms; protected by mu_
};

}  // namespace

std::unique_ptr<UploadLeases> NewSharedUploadLeases(RegistryStore& store) {
  return std::make_unique<SharedUploadLeases>(store);
}

}  // namespace shoal::tracker
