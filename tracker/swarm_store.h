// SwarmStore: who is in each torrent's swarm, and which peers an announce
// gets back.
//
// Soft state, rebuilt from announces after a restart. A peer that has not
// announced for `ttl_ms` is dropped.
//
// Policy for a reply, capped at numwant: never the asker; seeders first
// when the asker is downloading (a seeder asking gets leechers only); the
// asker's zone first within each group; otherwise most recently seen first.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_SWARM_STORE_H_
#define SHOAL_TRACKER_SWARM_STORE_H_

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace shoal::tracker {

using InfoHash20 = std::array<uint8_t, 20>;  // v1 info-hash, or a v2 one truncated

struct PeerEndpoint {
  std::string ip;     // textual IPv4 or IPv6
  uint16_t port = 0;
  bool seed = false;
  std::string zone;
};

struct AnnounceRequest {
  InfoHash20 info_hash{};
  std::string peer_id;  // 20 bytes
  PeerEndpoint self;
  enum class Event { kNone, kStarted, kCompleted, kStopped } event = Event::kNone;
  uint32_t numwant = 50;
};

struct AnnounceReply {
  std::vector<PeerEndpoint> peers;
  uint32_t complete = 0;    // seeders in the swarm
  uint32_t incomplete = 0;  // leechers
};

struct SwarmStats {
  size_t swarms = 0;
  size_t peers = 0;
};

class SwarmStore {
 public:
  explicit SwarmStore(int64_t ttl_ms) : ttl_ms_(ttl_ms) {}

  // Records the asker (or removes it on kStopped) and picks its peers.
  AnnounceReply Announce(const AnnounceRequest& req, int64_t now_ms);
  SwarmStats Stats();

 private:
  struct Peer {
    PeerEndpoint endpoint;
    int64_t last_seen_ms;
  };
  void Expire(std::map<std::string, Peer>& swarm, int64_t now_ms);  // REQUIRES: mu_ held

  const int64_t ttl_ms_;
  std::mutex mu_;
  std::map<InfoHash20, std::map<std::string, Peer>> swarms_;  // by peer_id; protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_SWARM_STORE_H_
