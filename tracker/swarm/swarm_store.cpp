#include "swarm/swarm_store.h"

#include <arpa/inet.h>

#include <algorithm>

namespace shoal::tracker {
namespace {

// At a limit, expired peers are swept at most this often, so announces
// refused at the limit do not each walk every swarm.
constexpr int64_t kFullSweepEveryMs = 1000;

}  // namespace

std::optional<PeerAddress> PeerAddress::Parse(const std::string& text) {
  PeerAddress a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1) {
    a.size = 4;
  } else if (inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1) {
    a.size = 16;
  } else {
    return std::nullopt;
  }
  return a;
}

std::string PeerAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (size == 0 ||
      inet_ntop(size == 4 ? AF_INET : AF_INET6, bytes.data(), text, sizeof text) == nullptr) {
    return "";
  }
  return text;
}

size_t SwarmStore::PeerKeyHash::operator()(const PeerKey& k) const {
  // Peer ids are chosen by the announcer: every byte counts, mixed with a
  // seed random per process, so nobody can aim announces at one bucket.
  static const uint64_t seed = std::random_device{}() * 0x9e3779b97f4a7c15ull | 1;
  uint64_t a, b;
  uint32_t c;
  std::memcpy(&a, k.id.data(), 8);
  std::memcpy(&b, k.id.data() + 8, 8);
  std::memcpy(&c, k.id.data() + 16, 4);
  uint64_t h = (a ^ seed) * 0xff51afd7ed558ccdull;
  h = (h ^ (h >> 32) ^ b) * 0xc4ceb9fe1a85ec53ull;
  h = (h ^ (h >> 29) ^ (static_cast<uint64_t>(c) << 8 | k.kind)) * 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(h ^ (h >> 32));
}

SwarmStore::PeerKey SwarmStore::KeyOf(const AnnounceRequest& req) {
  PeerKey k;
  if (req.holder != 0) {
    k.kind = 1;
    std::memcpy(k.id.data(), &req.holder, sizeof req.holder);
  } else {
    std::memcpy(k.id.data(), req.peer_id.data(), std::min(req.peer_id.size(), k.id.size()));
  }
  return k;
}

uint16_t SwarmStore::ZoneOf(const std::string& zone) {
  if (zone.empty()) return kNoZone;
  auto it = zones_.find(zone);
  if (it != zones_.end()) return it->second;
  if (zones_.size() >= kMaxZones) return kNoZone;
  const auto number = static_cast<uint16_t>(zones_.size() + 1);
  zones_.emplace(zone, number);
  return number;
}

void SwarmStore::Swarm::Insert(const Peer& p) {
  next_expiry_ms = std::min(next_expiry_ms, p.expires_ms);
  std::vector<Peer>& list = p.seed ? seeds : leechers;
  where.emplace(p.key, std::make_pair(p.seed, list.size()));
  list.push_back(p);
}

void SwarmStore::Swarm::Update(Where::iterator at, const Peer& p) {
  next_expiry_ms = std::min(next_expiry_ms, p.expires_ms);
  auto& [seed, slot] = at->second;
  if (seed == p.seed) {
    (seed ? seeds : leechers)[slot] = p;
    return;
  }
  TakeOut(seed ? seeds : leechers, slot);  // it moves between the lists
  std::vector<Peer>& to = p.seed ? seeds : leechers;
  at->second = {p.seed, to.size()};
  to.push_back(p);
}

void SwarmStore::Swarm::TakeOut(std::vector<Peer>& list, size_t slot) {
  if (slot + 1 != list.size()) {
    list[slot] = list.back();
    where.find(list[slot].key)->second.second = slot;
  }
  list.pop_back();
}

void SwarmStore::Swarm::Erase(Where::iterator at) {
  std::vector<Peer>& list = at->second.first ? seeds : leechers;
  const size_t slot = at->second.second;
  where.erase(at);
  TakeOut(list, slot);
}

bool SwarmStore::Swarm::Remove(const PeerKey& key) {
  auto at = where.find(key);
  if (at == where.end()) return false;
  Erase(at);
  return true;
}

size_t SwarmStore::Swarm::Expire(int64_t now_ms) {
  if (now_ms <= next_expiry_ms) return 0;
  std::vector<PeerKey> gone;
  int64_t next = INT64_MAX;
  for (const std::vector<Peer>* list : {&seeds, &leechers}) {
    for (const Peer& p : *list) {
      if (now_ms > p.expires_ms) {
        gone.push_back(p.key);
      } else {
        next = std::min(next, p.expires_ms);
      }
    }
  }
  for (const PeerKey& key : gone) Remove(key);
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

Status SwarmStore::Record(const AnnounceRequest& req, const Peer& self, int64_t now_ms) {
  auto it = swarms_.find(req.info_hash);
  if (it != swarms_.end()) peers_ -= it->second.Expire(now_ms);
  auto at = it != swarms_.end() ? it->second.where.find(self.key) : Swarm::Where::iterator{};
  const bool known = it != swarms_.end() && at != it->second.where.end();
  if (req.event == AnnounceRequest::Event::kStopped) {
    if (!known) return Status::OK();
    it->second.Erase(at);
    --peers_;
    auto held = req.holder != 0 ? holdings_.find(req.holder) : holdings_.end();
    if (held != holdings_.end()) {
      held_ -= held->second.swarms.erase(req.info_hash);
      if (held->second.swarms.empty()) Forget(held);
    }
    return Status::OK();
  }
  if (known) {
    it->second.Update(at, self);
    return Status::OK();
  }
  if (it != swarms_.end() && it->second.empty())
    swarms_.erase(it);  // Admit counts live swarms only
  SHOAL_RETURN_IF_ERROR(Admit(req.info_hash, now_ms));
  swarms_[req.info_hash].Insert(self);
  ++peers_;
  if (req.holder != 0) {
    auto [held, added] = holdings_.try_emplace(req.holder);
    if (added || held->second.agent != req.holder_agent) {
      if (!added) Unindex(held->second.agent, req.holder);
      held->second.agent = req.holder_agent;
      sessions_of_[held->second.agent].push_back(req.holder);
    }
    held_ += held->second.swarms.insert(req.info_hash).second ? 1 : 0;
  }
  return Status::OK();
}

Result<AnnounceReply> SwarmStore::Announce(const AnnounceRequest& req, int64_t now_ms) {
  AnnounceReply reply;
  SHOAL_RETURN_IF_ERROR(Announce(req, now_ms, &reply));
  return reply;
}

Status SwarmStore::Announce(const AnnounceRequest& req, int64_t now_ms, AnnounceReply* out) {
  AnnounceReply& reply = *out;
  reply.peers.clear();
  reply.complete = reply.incomplete = 0;
  if (req.numwant > 0) reply.peers.reserve(req.numwant);
  std::lock_guard<std::mutex> lock(mu_);
  Peer self;
  self.key = KeyOf(req);
  self.ip = req.self.ip;
  self.port = req.self.port;
  self.zone = ZoneOf(req.self.zone);
  self.seed = req.self.seed;
  self.expires_ms = req.holder != 0 ? INT64_MAX : now_ms + (req.self.seed ? seed_ttl_ms_ : ttl_ms_);
  SHOAL_RETURN_IF_ERROR(Record(req, self, now_ms));

  auto it = swarms_.find(req.info_hash);
  if (it == swarms_.end()) return Status::OK();
  const Swarm& swarm = it->second;
  reply.complete = static_cast<uint32_t>(swarm.seeds.size());
  reply.incomplete = static_cast<uint32_t>(swarm.leechers.size());
  const Asker asker{self.key, self.ip, self.port, self.zone};
  // Seeders have nothing to trade with seeders.
  if (!req.self.seed) Pick(swarm.seeds, asker, now_ms, req.numwant, &reply.peers);
  Pick(swarm.leechers, asker, now_ms, req.numwant - reply.peers.size(), &reply.peers);
  if (swarm.empty()) swarms_.erase(it);
  return Status::OK();
}

void SwarmStore::Pick(const std::vector<Peer>& list, const Asker& asker, int64_t now_ms,
                      size_t want, std::vector<PeerEndpoint>* out) {
  if (want == 0 || list.empty()) return;
  const size_t n = list.size();
  const size_t window = std::min(n, std::max<size_t>(32, 2 * want));
  const size_t start = window < n ? rng_() % n : 0;
  const size_t stop = out->size() + want;
  auto usable = [&](const Peer& p) {
    return !(p.key == asker.key) && now_ms <= p.expires_ms &&
           !(p.port == asker.port && p.ip == asker.ip);
  };
  // Pass 0 takes the asker's zone; pass 1 the others (everyone when the
  // asker names no zone).
  auto take = [&](int pass) {
    for (size_t k = 0, i = start; k < window && out->size() < stop; ++k) {
      const Peer& p = list[i];
      if (++i == n) i = 0;
      if (asker.zone != kNoZone && (p.zone == asker.zone) != (pass == 0)) continue;
      if (!usable(p)) continue;
      PeerEndpoint& e = out->emplace_back();
      e.ip = p.ip;
      e.port = p.port;
      e.seed = p.seed;
    }
  };
  if (asker.zone != kNoZone) take(0);
  take(1);
}

size_t SwarmStore::ReleaseLocked(uint64_t holder) {
  auto held = holdings_.find(holder);
  if (held == holdings_.end()) return 0;
  PeerKey key;
  key.kind = 1;
  std::memcpy(key.id.data(), &holder, sizeof holder);
  size_t dropped = 0;
  for (const InfoHash20& h : held->second.swarms) {
    auto it = swarms_.find(h);
    if (it == swarms_.end()) continue;
    dropped += it->second.Remove(key) ? 1 : 0;
    if (it->second.empty()) swarms_.erase(it);
  }
  peers_ -= dropped;
  held_ -= held->second.swarms.size();
  Forget(held);
  return dropped;
}

void SwarmStore::Forget(std::unordered_map<uint64_t, Holding>::iterator held) {
  Unindex(held->second.agent, held->first);
  holdings_.erase(held);
}

void SwarmStore::Unindex(const std::string& agent, uint64_t holder) {
  auto it = sessions_of_.find(agent);
  if (it == sessions_of_.end()) return;
  std::vector<uint64_t>& holders = it->second;
  holders.erase(std::remove(holders.begin(), holders.end(), holder), holders.end());
  if (holders.empty()) sessions_of_.erase(it);
}

size_t SwarmStore::Release(uint64_t holder) {
  std::lock_guard<std::mutex> lock(mu_);
  return ReleaseLocked(holder);
}

size_t SwarmStore::ReleaseHolders(const std::vector<uint64_t>& holders) {
  size_t dropped = 0;
  for (size_t i = 0; i < holders.size(); i += kReleaseBatch) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t end = std::min(holders.size(), i + kReleaseBatch);
    for (size_t j = i; j < end; ++j) dropped += ReleaseLocked(holders[j]);
  }
  return dropped;
}

size_t SwarmStore::ReleaseGone(const AgentSessions& held,
                               const std::function<bool(const std::string& agent)>& live) {
  std::vector<uint64_t> gone;
  for (const auto& [agent, holders] : held) {
    if (!live(agent)) gone.insert(gone.end(), holders.begin(), holders.end());
  }
  return ReleaseHolders(gone);
}

size_t SwarmStore::ReleaseUnless(const std::function<bool(const std::string& agent)>& live) {
  AgentSessions held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held.assign(sessions_of_.begin(), sessions_of_.end());
  }
  return ReleaseGone(held, live);
}

size_t SwarmStore::ReleaseAgents(const std::vector<std::string>& agents,
                                 const std::function<bool(const std::string& agent)>& live) {
  AgentSessions held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& agent : agents) {
      auto it = sessions_of_.find(agent);
      if (it != sessions_of_.end()) held.emplace_back(agent, it->second);
    }
  }
  return ReleaseGone(held, live);
}

SwarmStats SwarmStore::Stats(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  SweepLocked(now_ms);
  return SwarmStats{swarms_.size(), peers_, held_};
}

}  // namespace shoal::tracker
