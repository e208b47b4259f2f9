// UploadLeases: which publish is uploading which chunk right now, so two
// concurrent publishes of overlapping content upload each chunk once.
//
// Soft state: lost on restart, when every lease is free again (a duplicate
// upload then is harmless, and counted).
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_UPLOAD_LEASES_H_
#define SHOAL_TRACKER_UPLOAD_LEASES_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "shoal/chunk_id.h"

namespace shoal::tracker {

class UploadLeases {
 public:
  // Claims `id` for `holder` until now + ttl. True if the caller now holds
  // it (it was free, expired, or already its own).
  bool TryClaim(const ChunkId& id, const std::string& holder, int64_t now_ms, int64_t ttl_ms);
  // True if someone other than `holder` holds an unexpired lease.
  bool HeldByOther(const ChunkId& id, const std::string& holder, int64_t now_ms);
  // Lease held by anyone, unexpired.
  bool Held(const ChunkId& id, int64_t now_ms);
  void Release(const ChunkId& id);
  size_t size();

 private:
  struct Lease {
    std::string holder;
    int64_t expires_ms;
  };
  std::mutex mu_;
  std::unordered_map<ChunkId, Lease> leases_;  // protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_UPLOAD_LEASES_H_
