// ReadSlots: how many reads each token has in flight, bounded. A read holds
// its slot from the moment its token is known until its answer's last body
// byte is handed over (or its connection goes), so one caller streaming
// many large files at once cannot take every I/O slot, fetch and cache
// page of the agent from the others.
//
//   auto slot = slots.TryTake(token);
//   if (!slot) { answer 429 / 503 SlowDown; }
//   ... keep `slot` alive as long as the read is ...
//
// Thread-safety: TryTake and releasing slots are safe from any thread.
#ifndef SHOAL_AGENT_READ_READ_SLOTS_H_
#define SHOAL_AGENT_READ_READ_SLOTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace shoal {

class ReadSlots : public std::enable_shared_from_this<ReadSlots> {
 public:
  // REQUIRES: max_per_token >= 1.
  explicit ReadSlots(uint32_t max_per_token) : max_per_token_(max_per_token) {}

  // A slot for one more read with `token`, released when the last copy of
  // the pointer goes; null if the token already has max_per_token reads.
  // REQUIRES: owned by a shared_ptr.
  std::shared_ptr<const void> TryTake(const std::string& token);

  uint32_t max_per_token() const { return max_per_token_; }

 private:
  void Release(const std::string& token);

  // Constant after construction.
  const uint32_t max_per_token_;

  std::mutex mu_;
  // Protected by mu_: tokens with a read in flight only.
  std::map<std::string, uint32_t> in_flight_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_READ_SLOTS_H_
