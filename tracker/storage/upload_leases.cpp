#include "storage/upload_leases.h"

#include <mutex>
#include <unordered_map>

namespace shoal::tracker {
namespace {

class LocalUploadLeases final : public UploadLeases {
 public:
  Result<std::vector<bool>> Claim(const std::vector<ChunkId>& ids, const std::string& holder,
                                  int64_t now_ms, int64_t ttl_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<bool> held(ids.size(), false);
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = leases_.find(ids[i]);
      if (it != leases_.end() && it->second.holder != holder && it->second.expires_ms > now_ms) {
        continue;
      }
      leases_[ids[i]] = Lease{holder, now_ms + ttl_ms};
      held[i] = true;
    }
    return held;
  }

  Status Release(const std::vector<ChunkId>& ids) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const ChunkId& id : ids) leases_.erase(id);
    return Status::OK();
  }

  Result<std::unordered_set<ChunkId>> Leased(int64_t now_ms, bool drop_expired) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::unordered_set<ChunkId> out;
    for (auto it = leases_.begin(); it != leases_.end();) {
      if (it->second.expires_ms > now_ms) {
        out.insert(it->first);
        ++it;
      } else if (drop_expired) {
        it = leases_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  size_t held_here(int64_t now_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [id, lease] : leases_) n += lease.expires_ms > now_ms ? 1 : 0;
    return n;
  }

 private:
  struct Lease {
    std::string holder;
    int64_t expires_ms;
  };
  std::mutex mu_;
  std::unordered_map<ChunkId, Lease> leases_;  // protected by mu_
};

}  // namespace

std::unique_ptr<UploadLeases> NewLocalUploadLeases() {
  return std::make_unique<LocalUploadLeases>();
}

std::unique_ptr<UploadLeases> NewUploadLeases(const std::string& registry, RegistryStore& store) {
  if (registry.empty()) return NewLocalUploadLeases();
  return NewSharedUploadLeases(store);
}

}  // namespace shoal::tracker
