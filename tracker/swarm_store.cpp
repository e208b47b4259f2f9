#include "swarm_store.h"

#include <algorithm>

namespace shoal::tracker {
namespace {

// At a limit, expired peers are swept at most this often, so announces
// refused at the limit do not each walk every swarm.
constexpr int64_t kFullSweepEveryMs = 1000;

}  // namespace

size_t SwarmStore::Expire(Swarm& swarm, int64_t now_ms) {
  size_t dropped = 0;
  for (auto it = swarm.begin(); it != swarm.end();) {
    if (now_ms > it->second.expires_ms) {
      it = swarm.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

size_t SwarmStore::SweepLocked(int64_t now_ms) {
  last_sweep_ms_ = now_ms;
  size_t dropped = 0;
  for (auto it = swarms_.begin(); it != swarms_.end();) {
    dropped += Expire(it->second, now_ms);
    it = it->second.empty() ? swarms_.erase(it) : std::next(it);
  }
  peers_ -= dropped;
  return dropped;
}

size_t SwarmStore::Sweep(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return SweepLocked(now_ms);
}

Status SwarmStore::Admit(const InfoHash20& h, int64_t now_ms) {
  auto full = [&] {
    return peers_ >= limits_.max_peers ||
           (swarms_.count(h) == 0 && swarms_.size() >= limits_.max_swarms);
  };
  if (full() && now_ms - last_sweep_ms_ >= kFullSweepEveryMs) SweepLocked(now_ms);
  if (peers_ >= limits_.max_peers) {
    return Status::Unavailable("the tracker holds its limit of " +
                               std::to_string(limits_.max_peers) +
                               " peers (--max-swarm-peers); announce again once idle peers expire");
  }
  if (swarms_.count(h) == 0 && swarms_.size() >= limits_.max_swarms) {
    return Status::Unavailable("the tracker holds its limit of " +
                               std::to_string(limits_.max_swarms) +
                               " swarms (--max-swarms); announce again once idle swarms expire");
  }
  return Status::OK();
}

Status SwarmStore::Record(const AnnounceRequest& req, int64_t now_ms) {
  auto it = swarms_.find(req.info_hash);
  if (it != swarms_.end()) peers_ -= Expire(it->second, now_ms);
  const bool known = it != swarms_.end() && it->second.count(req.peer_id) != 0;
  if (req.event == AnnounceRequest::Event::kStopped) {
    if (!known) return Status::OK();
    it->second.erase(req.peer_id);
    --peers_;
    if (req.holder != 0 && holdings_.count(req.holder) != 0) {
      Holding& held = holdings_[req.holder];
      held_ -= held.swarms.erase(req.info_hash);
      if (held.swarms.empty()) holdings_.erase(req.holder);
    }
    return Status::OK();
  }
  if (known) {
    it->second[req.peer_id] = MakePeer(req, now_ms);
    return Status::OK();
  }
  if (it != swarms_.end() && it->second.empty())
    swarms_.erase(it);  // Admit counts live swarms only
  SHOAL_RETURN_IF_ERROR(Admit(req.info_hash, now_ms));
  swarms_[req.info_hash][req.peer_id] = MakePeer(req, now_ms);
  ++peers_;
  if (req.holder != 0) {
    Holding& held = holdings_[req.holder];
    held.agent = req.holder_agent;
    held.peer_id = req.peer_id;
    held_ += held.swarms.insert(req.info_hash).second ? 1 : 0;
  }
  return Status::OK();
}

Result<AnnounceReply> SwarmStore::Announce(const AnnounceRequest& req, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  SHOAL_RETURN_IF_ERROR(Record(req, now_ms));

  AnnounceReply reply;
  auto it = swarms_.find(req.info_hash);
  if (it == swarms_.end()) return reply;
  const Swarm& swarm = it->second;
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
    return (p->endpoint.seed ? 0 : 2) +
           (!req.self.zone.empty() && p->endpoint.zone == req.self.zone ? 0 : 1);
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Peer* a, const Peer* b) {
    int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    return a->last_seen_ms > b->last_seen_ms;
  });
  size_t n = std::min<size_t>(candidates.size(), req.numwant);
  for (size_t i = 0; i < n; ++i) reply.peers.push_back(candidates[i]->endpoint);
  if (swarm.empty()) swarms_.erase(it);
  return reply;
}

size_t SwarmStore::ReleaseLocked(uint64_t holder) {
  auto held = holdings_.find(holder);
  if (held == holdings_.end()) return 0;
  size_t dropped = 0;
  for (const InfoHash20& h : held->second.swarms) {
    auto it = swarms_.find(h);
    if (it == swarms_.end()) continue;
    dropped += it->second.erase(held->second.peer_id);
    if (it->second.empty()) swarms_.erase(it);
  }
  peers_ -= dropped;
  held_ -= held->second.swarms.size();
  holdings_.erase(held);
  return dropped;
}

size_t SwarmStore::Release(uint64_t holder) {
  std::lock_guard<std::mutex> lock(mu_);
  return ReleaseLocked(holder);
}

size_t SwarmStore::ReleaseUnless(const std::function<bool(const std::string& agent)>& live) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> gone;
  for (const auto& [holder, held] : holdings_) {
    if (!live(held.agent)) gone.push_back(holder);
  }
  size_t dropped = 0;
  for (uint64_t holder : gone) dropped += ReleaseLocked(holder);
  return dropped;
}

SwarmStats SwarmStore::Stats(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  SweepLocked(now_ms);
  return SwarmStats{swarms_.size(), peers_, held_};
}

}  // namespace shoal::tracker
