#include "swarm_store.h"

#include <algorithm>

namespace shoal::tracker {

void SwarmStore::Expire(std::map<std::string, Peer>& swarm, int64_t now_ms) {
  for (auto it = swarm.begin(); it != swarm.end();) {
    if (now_ms - it->second.last_seen_ms > ttl_ms_) {
      it = swarm.erase(it);
    } else {
      ++it;
    }
  }
}

AnnounceReply SwarmStore::Announce(const AnnounceRequest& req, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& swarm = swarms_[req.info_hash];
  Expire(swarm, now_ms);
  if (req.event == AnnounceRequest::Event::kStopped) {
    swarm.erase(req.peer_id);
  } else {
    swarm[req.peer_id] = Peer{req.self, now_ms};
  }

  AnnounceReply reply;
  std::vector<const Peer*> candidates;
  for (const auto& [id, peer] : swarm) {
    (peer.endpoint.seed ? reply.complete : reply.incomplete)++;
    if (id == req.peer_id) continue;
    if (peer.endpoint.ip == req.self.ip && peer.endpoint.port == req.self.port) continue;
    if (req.self.seed && peer.endpoint.seed) continue;  // seeders have nothing to trade
    candidates.push_back(&peer);
  }
  auto rank = [&](const Peer* p) {
    // Lower sorts first: seeders, then same zone.
    return (p->endpoint.seed ? 0 : 2) + (!req.self.zone.empty() && p->endpoint.zone == req.self.zone ? 0 : 1);
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Peer* a, const Peer* b) {
    int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    return a->last_seen_ms > b->last_seen_ms;
  });
  size_t n = std::min<size_t>(candidates.size(), req.numwant);
  for (size_t i = 0; i < n; ++i) reply.peers.push_back(candidates[i]->endpoint);
  if (swarm.empty()) swarms_.erase(req.info_hash);
  return reply;
}

SwarmStats SwarmStore::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  SwarmStats s;
  s.swarms = swarms_.size();
  for (const auto& [h, swarm] : swarms_) s.peers += swarm.size();
  return s;
}

}  // namespace shoal::tracker
