// RegistryFollower: keeps a tracker's in-memory views of the registry (the
// torrents it may serve, the token revocations it enforces) in step with a
// registry that other trackers write too.
//
// At start it indexes every stored version; then each CatchUp reads the
// registry's feed of versions committed and deleted (F| keys, in commit
// order) past the last entry it applied, and the revocations past the last
// one held. A tracker alone on LevelDB finds nothing new; one of a fleet
// sharing etcd sees another's publish, delete or revocation within one
// CatchUp period. Applying an entry twice is harmless (TorrentIndex is
// keyed by version), so a commit this tracker made and indexed at once is
// simply seen again.
//
// Thread-safety: Start once, then CatchUp from one thread at a time (the
// tracker runs it on its blocking pool).
#ifndef SHOAL_TRACKER_REGISTRY_FOLLOWER_H_
#define SHOAL_TRACKER_REGISTRY_FOLLOWER_H_

#include <atomic>
#include <cstdint>

#include "shoal/status.h"

namespace shoal::tracker {

class RegistryStore;
class TokenVerifier;
class TorrentIndex;

class RegistryFollower {
 public:
  // Every reference must outlive the follower.
  RegistryFollower(RegistryStore& store, TorrentIndex& torrents, TokenVerifier& tokens)
      : store_(store), torrents_(torrents), tokens_(tokens) {}

  // Indexes every stored version. The feed is read from where it stood
  // before the scan, so nothing committed meanwhile is missed.
  Status Start();
  // Applies the feed entries and revocations stored since the last call.
  // Returns the feed entries applied. An entry whose version cannot be
  // read stops the call, to be retried from it next time.
  Result<uint64_t> CatchUp();

  uint64_t position() const { return position_; }

 private:
  RegistryStore& store_;
  TorrentIndex& torrents_;
  TokenVerifier& tokens_;
  std::atomic<uint64_t> position_{0};  // the last feed entry applied
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_FOLLOWER_H_
