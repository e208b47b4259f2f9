// SwarmStore: who is in each torrent's swarm, and which peers an announce
// gets back.
//
// Soft state, rebuilt from announces after a restart. A peer that has not
// announced for `ttl_ms` is dropped, and a swarm with no peer left with it:
// by Sweep (which the tracker runs periodically), by Stats, whenever a limit
// is reached, and by the next announce to its swarm once the swarm's
// earliest expiry has passed.
//
// Cost: an announce costs O(numwant), not O(peers in the swarm), and
// allocates nothing once its swarm and peer exist. Each swarm keeps its
// seeders and its leechers in two dense lists, so a peer is added, moved or
// removed in O(1); a reply looks at a window of at most max(32, 2 x numwant)
// candidates starting at a random place in each list, which is every
// candidate in a small swarm. Addresses are kept in binary and zones as
// small numbers, so a reply is copied, never parsed or formatted.
//
// A peer an agent's session holds (AnnounceRequest::holder) has no TTL: it
// stays until the session stops it or Release drops all of the session's
// peers at once, so a swarm of held peers is never scanned for expiry. The
// limits bound memory whatever announces arrive: a peer that would start a
// swarm beyond max_swarms, or join beyond max_peers in all, is refused;
// peers already known may always re-announce. At most kMaxZones distinct
// zone names are told apart; later ones count as no zone.
//
// Policy for a reply, capped at numwant: never the asker; seeders first
// when the asker is downloading (a seeder asking gets leechers only); the
// asker's zone first within each group; otherwise the window's order, which
// starts at a random peer, so replies spread over the swarm.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_SWARM_STORE_H_
#define SHOAL_TRACKER_SWARM_STORE_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "shoal/status.h"

namespace shoal::tracker {

using InfoHash20 = std::array<uint8_t, 20>;  // v1 info-hash, or a v2 one truncated

struct InfoHash20Hash {
  // Info-hashes are SHA-1 or SHA-256 output: their first bytes are as good
  // as any hash of them.
  size_t operator()(const InfoHash20& h) const {
    size_t v;
    std::memcpy(&v, h.data(), sizeof v);
    return v;
  }
};

// An IPv4 or IPv6 address in binary, as compact peer lists carry it.
struct PeerAddress {
  std::array<uint8_t, 16> bytes{};
  uint8_t size = 0;  // 4 (IPv4), 16 (IPv6), or 0 (none)

  // A textual IPv4 or IPv6 address; nullopt if it is neither.
  static std::optional<PeerAddress> Parse(const std::string& text);
  std::string ToString() const;  // "" for none
  bool operator==(const PeerAddress& o) const {
    return size == o.size && std::memcmp(bytes.data(), o.bytes.data(), size) == 0;
  }
};

struct PeerEndpoint {
  PeerAddress ip;
  uint16_t port = 0;
  bool seed = false;
  std::string zone;  // in a reply: always empty
};

struct AnnounceRequest {
  InfoHash20 info_hash{};
  std::string peer_id;  // 20 bytes; not used when `holder` is set
  PeerEndpoint self;
  enum class Event { kNone, kStarted, kCompleted, kStopped } event = Event::kNone;
  uint32_t numwant = 50;
  // Nonzero: the agent session that holds this peer (no TTL, see Release),
  // and that agent's id. The session is then the peer's identity.
  uint64_t holder = 0;
  std::string_view holder_agent;
};

struct AnnounceReply {
  std::vector<PeerEndpoint> peers;
  uint32_t complete = 0;    // seeders in the swarm
  uint32_t incomplete = 0;  // leechers
};

struct SwarmStats {
  size_t swarms = 0;  // with at least one live peer
  size_t peers = 0;   // live peers summed over swarms
  size_t held = 0;    // ... of which agent sessions hold
};

struct SwarmLimits {
  size_t max_swarms = 200000;  // torrents with peers at once
  size_t max_peers = 1000000;  // peers summed over every swarm
};

class SwarmStore {
 public:
  // A peer that has not announced for `ttl_ms` is dropped; a seeder (which
  // announces less often, see TrackerOptions) after `seed_ttl_ms`.
  SwarmStore(int64_t ttl_ms, int64_t seed_ttl_ms, SwarmLimits limits)
      : ttl_ms_(ttl_ms), seed_ttl_ms_(seed_ttl_ms), limits_(limits) {}

  // Records the asker (or removes it on kStopped) and picks its peers.
  // Unavailable, naming the limit, when a new swarm or peer would pass one.
  Result<AnnounceReply> Announce(const AnnounceRequest& req, int64_t now_ms);
  // The same into `reply`, whose peer list's memory is reused: a batch of
  // announces allocates once, not once per entry.
  Status Announce(const AnnounceRequest& req, int64_t now_ms, AnnounceReply* reply);
  // Drops expired peers and empty swarms everywhere; returns the peers dropped.
  size_t Sweep(int64_t now_ms);
  // Drops every peer session `holder` holds (its session ended); returns
  // how many. Costs the number of its swarms, not of all swarms.
  size_t Release(uint64_t holder);
  // Releases the sessions whose agent `live` says is gone (it missed its
  // heartbeats); returns the peers dropped. Asks `live` once about each
  // agent that holds a session, without holding the store's lock (`live`
  // may take locks of its own), and releases a few hundred sessions per
  // hold of the lock, so announces on other threads go on meanwhile. Only
  // the sessions held when it looked are released: an agent that
  // registers again meanwhile keeps its new one.
  size_t ReleaseUnless(const std::function<bool(const std::string& agent)>& live);
  // The same for `agents` alone (those the directory dropped since the
  // last look), so the cost is theirs, not the fleet's. An agent `live`
  // says is back keeps its sessions.
  size_t ReleaseAgents(const std::vector<std::string>& agents,
                       const std::function<bool(const std::string& agent)>& live);
  // Live swarms and peers at `now_ms` (sweeps first).
  SwarmStats Stats(int64_t now_ms);

 private:
  // Who a swarm entry is: a BitTorrent peer id (kind 0) or an agent
  // session (kind 1, the holder in the first 8 bytes).
  struct PeerKey {
    std::array<uint8_t, 20> id{};
    uint8_t kind = 0;
    bool operator==(const PeerKey& o) const { return kind == o.kind && id == o.id; }
  };
  struct PeerKeyHash {
    size_t operator()(const PeerKey& k) const;
  };
  static PeerKey KeyOf(const AnnounceRequest& req);
  static constexpr uint16_t kNoZone = 0;
  static constexpr size_t kMaxZones = 4096;
  // Sessions released per hold of the lock by ReleaseUnless and
  // ReleaseAgents: at 200 torrents a session, a few thousand entries.
  static constexpr size_t kReleaseBatch = 16;

  struct Peer {
    PeerKey key;
    PeerAddress ip;
    uint16_t port = 0;
    uint16_t zone = kNoZone;
    bool seed = false;
    int64_t expires_ms = 0;  // INT64_MAX: held by a session
  };
  // The asker, as Pick compares candidates with it.
  struct Asker {
    PeerKey key;
    PeerAddress ip;
    uint16_t port;
    uint16_t zone;
  };
  // One torrent's peers: seeders and leechers in two dense lists, and
  // where each peer sits in them.
  struct Swarm {
    using Where = std::unordered_map<PeerKey, std::pair<bool, size_t>, PeerKeyHash>;
    std::vector<Peer> seeds, leechers;
    Where where;                         // key -> (seed, slot)
    int64_t next_expiry_ms = INT64_MAX;  // no expiring peer before this

    size_t size() const { return seeds.size() + leechers.size(); }
    bool empty() const { return where.empty(); }
    // Adds a peer whose key is not here yet.
    void Insert(const Peer& p);
    // Replaces the peer `at` points to with `p` (same key), moving it
    // between the lists if it became a seeder or a leecher.
    void Update(Where::iterator at, const Peer& p);
    // Removes the peer `at` points to.
    void Erase(Where::iterator at);
    // Removes the peer with this key; false if there is none.
    bool Remove(const PeerKey& key);
    // Takes slot `slot` out of `list`, filling it with the last peer.
    void TakeOut(std::vector<Peer>& list, size_t slot);
    // Removes the peers expired at `now_ms` (when any may be); the count.
    size_t Expire(int64_t now_ms);
  };
  // The peers one session holds: its agent, and the swarms.
  struct Holding {
    std::string agent;
    std::unordered_set<InfoHash20, InfoHash20Hash> swarms;
  };
  // The zone's number, interning it; kNoZone for "" or past kMaxZones.
  // REQUIRES: mu_ held
  uint16_t ZoneOf(const std::string& zone);
  // Appends to `out` up to `want` peers of `list` for `asker`.
  // REQUIRES: mu_ held
  void Pick(const std::vector<Peer>& list, const Asker& asker, int64_t now_ms, size_t want,
            std::vector<PeerEndpoint>* out);
  // Records (or, on kStopped, removes) the asker. REQUIRES: mu_ held
  Status Record(const AnnounceRequest& req, const Peer& self, int64_t now_ms);
  size_t ReleaseLocked(uint64_t holder);  // REQUIRES: mu_ held
  // Agents and the sessions each held when they were looked at.
  using AgentSessions = std::vector<std::pair<std::string, std::vector<uint64_t>>>;
  // Releases `holders` (those gone already are skipped), kReleaseBatch per
  // hold of mu_; the peers dropped. Takes mu_.
  size_t ReleaseHolders(const std::vector<uint64_t>& holders);
  // Releases the sessions in `held` of the agents `live` says are gone,
  // asking it without holding mu_. Takes mu_.
  size_t ReleaseGone(const AgentSessions& held,
                     const std::function<bool(const std::string& agent)>& live);
  // Erases a holding and its place in sessions_of_. REQUIRES: mu_ held
  void Forget(std::unordered_map<uint64_t, Holding>::iterator held);
  void Unindex(const std::string& agent, uint64_t holder);  // REQUIRES: mu_ held
  size_t SweepLocked(int64_t now_ms);                       // REQUIRES: mu_ held
  // OK, or which limit a peer new to swarm `h` would pass. May sweep, which
  // can erase swarms. REQUIRES: mu_ held
  Status Admit(const InfoHash20& h, int64_t now_ms);

  // Constant after construction.
  const int64_t ttl_ms_;
  const int64_t seed_ttl_ms_;
  const SwarmLimits limits_;

  std::mutex mu_;
  std::unordered_map<InfoHash20, Swarm, InfoHash20Hash> swarms_;  // protected by mu_
  size_t peers_ = 0;                                // summed over swarms_; protected by mu_
  std::unordered_map<uint64_t, Holding> holdings_;  // by holder; protected by mu_
  std::unordered_map<std::string, std::vector<uint64_t>> sessions_of_;  // agent -> holders; mu_
  std::unordered_map<std::string, uint16_t> zones_;  // name -> number; protected by mu_
  size_t held_ = 0;                                  // summed over holdings_; protected by mu_
  int64_t last_sweep_ms_ = 0;                        // protected by mu_
  std::minstd_rand rng_{0x5eed};                     // where reply windows start; protected by mu_
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_SWARM_STORE_H_
