// ChunkStoreImpl's view of its room: writes refused for want of it, and
// whether eviction could make it now.
#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>

#include "store/chunk_store_impl.h"

namespace shoal {

void ChunkStoreImpl::NoteRefusalLocked(uint64_t bytes, const std::string& why) {
  ++counters_.no_space_refusals;
  if (!refusing_) refusing_since_ = std::chrono::steady_clock::now();
  refused_bytes_ = bytes;
  refusal_ = why;
  refusing_ = true;
}

StoreSpace ChunkStoreImpl::Space() {
  StoreSpace s;
  struct statvfs fs {};
  const bool have_fs = ::statvfs(options_.dir.c_str(), &fs) == 0;
  if (have_fs) s.disk_free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  std::lock_guard<std::mutex> l(mu_);
  s.evictable_bytes = used_bytes_ - std::min(used_bytes_, pinned_bytes_);
  if (!refusing_) return s;
  s.refusing = true;
  s.refusing_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - refusing_since_)
                      .count();
  s.refused_bytes = refused_bytes_;
  s.why = refusal_;
  const uint64_t held = pinned_bytes_ + reserved_bytes_;
  const bool budget =
      options_.capacity_bytes >= held && options_.capacity_bytes - held >= refused_bytes_;
  const bool disk =
      !have_fs || s.disk_free_bytes + s.evictable_bytes >= refused_bytes_ + kIndexSlack;
  s.room = budget && disk;
  return s;
}

}  // namespace shoal
