// OriginLedger: the chunks this agent reads from the origin, told to the
// pulls that want them.
//
// A pull lacks some chunks; this agent may read one of them from the origin
// for the pull itself (the local rule), on the tracker's fetch order as the
// chunk's owner, or for another pull. Either way the origin sent those
// bytes to this agent, and the pull counts them as from the origin. Every
// origin fetch that sends bytes calls Record(); a pull watches the chunks it
// lacks from when it plans until it ends.
//
// Thread-safety: every method may be called from any thread. A Watch must
// be destroyed before its ledger.
#ifndef SHOAL_AGENT_DAEMON_ORIGIN_LEDGER_H_
#define SHOAL_AGENT_DAEMON_ORIGIN_LEDGER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "shoal/chunk_id.h"

namespace shoal {

class OriginLedger {
 public:
  class Watch {
   public:
    ~Watch();  // stops counting
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

    // Bytes of the watched chunks the origin has sent this agent since the
    // watch began; each chunk counts once.
    uint64_t bytes() const;

   private:
    friend class OriginLedger;
    Watch(OriginLedger& ledger, std::unordered_set<ChunkId> wanted);

    OriginLedger& ledger_;
    std::unordered_set<ChunkId> wanted_;  // not yet counted; protected by ledger_.mu_
    uint64_t bytes_ = 0;                  // protected by ledger_.mu_
  };

  OriginLedger() = default;
  OriginLedger(const OriginLedger&) = delete;
  OriginLedger& operator=(const OriginLedger&) = delete;

  // Starts counting the origin's bytes for `chunks`.
  std::unique_ptr<Watch> Start(const std::vector<ChunkId>& chunks);

  // The origin sent this agent `bytes` of `chunk` (0 records nothing).
  void Record(const ChunkId& chunk, uint64_t bytes);

 private:
  mutable std::mutex mu_;
  std::vector<Watch*> watches_;  // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_ORIGIN_LEDGER_H_
