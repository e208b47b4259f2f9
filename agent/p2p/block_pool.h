// BlockPool: reusable 16 KiB buffers for the blocks the disk interface copies
// out of libtorrent. glibc's malloc spends more on a 16 KiB buffer freed on
// another thread (consolidating, trimming) than the pool's lock costs.
//
// Thread-safety: Get and Put may be called from any thread.
#ifndef SHOAL_AGENT_P2P_BLOCK_POOL_H_
#define SHOAL_AGENT_P2P_BLOCK_POOL_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace shoal {

class BlockPool {
 public:
  static constexpr size_t kBlockBytes = 16 * 1024;

  // Keeps at most `max_free` idle buffers (kBlockBytes each).
  explicit BlockPool(size_t max_free) : max_free_(max_free) {}
  ~BlockPool() {
    for (char* b : free_) delete[] b;
  }
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  char* Get() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!free_.empty()) {
        char* b = free_.back();
        free_.pop_back();
        return b;
      }
    }
    return new char[kBlockBytes];
  }

  void Put(char* b) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (free_.size() < max_free_) {
        free_.push_back(b);
        return;
      }
    }
    delete[] b;
  }

 private:
  const size_t max_free_;
  std::mutex mu_;
  std::vector<char*> free_;  // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_BLOCK_POOL_H_
