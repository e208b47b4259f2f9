#include "swarm_store.h"

#include <algorithm>

namespace shoal::tracker {
namespace {

// At a limit, expired peers are swept at most this often, so announces
// refused at the limit do not each walk every swarm.
constexpr int64_t kFullSweepEveryMs = 1000;

}  // namespace

bool SwarmStore::Swarm::Upsert(Peer p) {
  next_expiry_ms = std::min(next_expiry_ms, p.expires_ms);
  auto at = where.find(p.id);
  if (at != where.end() && at->second.first == p.endpoint.seed) {
    (p.endpoint.seed ? seeds : leechers)[at->second.second] = std::move(p);
    return false;
  }
  const bool fresh = at == where.end();
  if (!fresh) Remove(p.id);  // it moved between the lists
  std::vector<Peer>& list = p.endpoint.seed ? seeds : leechers;
  where[p.id] = {p.endpoint.seed, list.size()};
  list.push_back(std::move(p));
  return fresh;
}

bool SwarmStore::Swarm::Remove(const std::string& id) {
  auto at = where.find(id);
  if (at == where.end()) return false;
  std::vector<Peer>& list = at->second.first ? seeds : leechers;
  const size_t slot = at->second.second;
  where.erase(at);
  if (slot + 1 != list.size()) {
    list[slot] = std::move(list.back());
    where[list[slot].id].second = slot;
  }
  list.pop_back();
  return true;
}

size_t SwarmStore::Swarm::Expire(int64_t now_ms) {
  if (now_ms <= next_expiry_ms) return 0;
  std::vector<std::string> gone;
  int64_t next = INT64_MAX;
  for (const std::vector<Peer>* list : {&seeds, &leechers}) {
    for (const Peer& p : *list) {
      if (now_ms > p.expires_ms) {
        gone.push_back(p.id);
      } else {
        next = std::min(next, p.expires_ms);
      }
    }
  }
  for (const std::string& id : gone) Remove(id);
  next_expiry_ms = next;
  return gone.size();
}

size_t SwarmStore::SweepLocked(int64_t now_ms) {
  last_sweep_ms_ = now_ms;
  size_t dropped = 0;
  for (auto it = swarms_.begin(); it != swarms_.end();) {
    dropped += it->second.Expire(now_ms);
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
  if (it != swarms_.end()) peers_ -= it->second.Expire(now_ms);
  const bool known = it != swarms_.end() && it->second.where.count(req.peer_id) != 0;
  if (req.event == AnnounceRequest::Event::kStopped) {
    if (!known) return Status::OK();
    it->second.Remove(req.peer_id);
    --peers_;
    if (req.holder != 0 && holdings_.count(req.holder) != 0) {
      Holding& held = holdings_[req.holder];
      held_ -= held.swarms.erase(req.info_hash);
      if (held.swarms.empty()) holdings_.erase(req.holder);
    }
    return Status::OK();
  }
  if (known) {
    it->second.Upsert(MakePeer(req, now_ms));
    return Status::OK();
  }
  if (it != swarms_.end() && it->second.empty())
    swarms_.erase(it);  // Admit counts live swarms only
  SHOAL_RETURN_IF_ERROR(Admit(req.info_hash, now_ms));
  swarms_[req.info_hash].Upsert(MakePeer(req, now_ms));
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
  reply.complete = static_cast<uint32_t>(swarm.seeds.size());
  reply.incomplete = static_cast<uint32_t>(swarm.leechers.size());
  // Seeders have nothing to trade with seeders.
  if (!req.self.seed) Pick(swarm.seeds, req, now_ms, req.numwant, &reply.peers);
  Pick(swarm.leechers, req, now_ms, req.numwant - reply.peers.size(), &reply.peers);
  if (swarm.empty()) swarms_.erase(it);
  return reply;
}

void SwarmStore::Pick(const std::vector<Peer>& list, const AnnounceRequest& req, int64_t now_ms,
                      size_t want, std::vector<PeerEndpoint>* out) {
  if (want == 0 || list.empty()) return;
  const size_t window = std::min(list.size(), std::max<size_t>(32, 2 * want));
  const size_t start = window < list.size() ? rng_() % list.size() : 0;
  std::vector<const Peer*> candidates;
  candidates.reserve(window);
  for (size_t k = 0; k < window; ++k) {
    const Peer& p = list[(start + k) % list.size()];
    if (p.id == req.peer_id || now_ms > p.expires_ms) continue;
    if (p.endpoint.ip == req.self.ip && p.endpoint.port == req.self.port) continue;
    candidates.push_back(&p);
  }
  auto near = [&](const Peer* p) {
    return !req.self.zone.empty() && p->endpoint.zone == req.self.zone;
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Peer* a, const Peer* b) {
    if (near(a) != near(b)) return near(a);
    return a->last_seen_ms > b->last_seen_ms;
  });
  const size_t n = std::min(candidates.size(), want);
  for (size_t i = 0; i < n; ++i) out->push_back(candidates[i]->endpoint);
}

size_t SwarmStore::ReleaseLocked(uint64_t holder) {
  auto held = holdings_.find(holder);
  if (held == holdings_.end()) return 0;
  size_t dropped = 0;
  for (const InfoHash20& h : held->second.swarms) {
    auto it = swarms_.find(h);
    if (it == swarms_.end()) continue;
    dropped += it->second.Remove(held->second.peer_id) ? 1 : 0;
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
