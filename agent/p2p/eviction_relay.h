// EvictionRelay: carries a ChunkStore's evictions to a TorrentEngine.
//
// The store's EvictionListener is fixed when the store opens, before any
// engine exists, and the engine may stop before the store does. Give the
// store relay->Listener(), Attach() the engine once it has started, and
// Detach() before it is destroyed; evictions in between reach it, others are
// dropped (a new engine reads the store afresh).
//
// Thread-safety: all methods may be called from any thread. Detach() waits
// for a call in flight to the engine to return.
#ifndef SHOAL_AGENT_P2P_EVICTION_RELAY_H_
#define SHOAL_AGENT_P2P_EVICTION_RELAY_H_

#include <memory>
#include <mutex>

#include "p2p/torrent_engine.h"
#include "shoal/store_options.h"

namespace shoal {

class EvictionRelay : public std::enable_shared_from_this<EvictionRelay> {
 public:
  // A listener for StoreOptions::on_evict; it keeps the relay alive.
  EvictionListener Listener() {
    std::shared_ptr<EvictionRelay> self = shared_from_this();
    return [self](const ChunkId& id) { self->Forward(id); };
  }
  void Attach(TorrentEngine* engine) {
    std::lock_guard<std::mutex> l(mu_);
    engine_ = engine;
  }
  void Detach() { Attach(nullptr); }

 private:
  void Forward(const ChunkId& id) {
    std::lock_guard<std::mutex> l(mu_);
    if (engine_ != nullptr) engine_->ChunkEvicted(id);
  }

  std::mutex mu_;
  TorrentEngine* engine_ = nullptr;  // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_EVICTION_RELAY_H_
