#include "agents/agent_directory.h"

#include <algorithm>
#include <cmath>

namespace shoal::tracker {

void AgentDirectory::Changed(const std::string& id, uint64_t weight, bool left) {
  ++epoch_;
  uint64_t prev = 0;
  auto [last, fresh] = last_change_.try_emplace(id, epoch_);
  if (!fresh) {
    prev = last->second;
    Logged(prev).next = epoch_;
    last->second = epoch_;
  }
  log_.push_back({epoch_, id, weight, left, prev, 0});
  if (log_.size() > kRingLogSize) {
    const Change& oldest = log_.front();
    if (oldest.next == 0) {
      last_change_.erase(oldest.id);
    } else {
      Logged(oldest.next).prev = 0;
    }
    log_.pop_front();
  }
}

bool AgentDirectory::NetChange(const Change& c, uint64_t since) {
  if (c.next != 0) return false;  // a later change of the member decides
  // The member's first change after `since`: it left as it was, and came back so.
  const Change* first = &c;
  while (first->prev > since) first = &Logged(first->prev);
  return !(first != &c && first->left && !c.left && first->weight == c.weight);
}

int64_t AgentDirectory::IntervalLocked(int factor) const {
  int64_t ms = heartbeat_ms_;
  if (heartbeats_per_s_ > 0) {
    // The interval at which beats_ heartbeats come at the budget's rate,
    // rounded up to 100 ms so it does not move with every join.
    const double paced = static_cast<double>(beat_units_) * 1000.0 /
                         (static_cast<double>(kBeatUnits) * heartbeats_per_s_);
    ms = std::max(ms, static_cast<int64_t>(std::ceil(paced / 100.0)) * 100);
  }
  return ms * std::max(factor, 1);
}

int64_t AgentDirectory::IntervalMs() {
  std::lock_guard<std::mutex> lock(mu_);
  return IntervalLocked(1);
}

void AgentDirectory::CountBeats(const AgentRecord& r, int sign) {
  const int64_t units = kBeatUnits / std::max(r.heartbeat_factor, 1);
  beat_units_ = std::max<int64_t>(0, beat_units_ + sign * units);
}

uint64_t AgentDirectory::Join(AgentRecord record, int64_t now_ms, int64_t* told_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  record.joined_ms = now_ms;
  record.last_heartbeat_ms = now_ms;
  const std::string id = record.id;
  const uint64_t weight = record.cache_bytes;
  auto old = members_.find(id);
  if (old != members_.end()) CountBeats(old->second, -1);
  CountBeats(record, +1);
  if (record.heartbeat_ms <= 0) record.heartbeat_ms = IntervalLocked(record.heartbeat_factor);
  if (told_ms != nullptr) *told_ms = record.heartbeat_ms;
  members_[id] = std::move(record);
  Changed(id, weight, false);
  return epoch_;
}

bool AgentDirectory::Heartbeat(const std::string& id, const AgentStats& stats, int64_t now_ms,
                               int64_t waited_ms, int64_t* next_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return false;
  AgentRecord& r = it->second;
  r.last_heartbeat_ms = now_ms;
  if (stats.origin_bytes_read > r.stats.origin_bytes_read) r.origin_read_ms = now_ms;
  r.stats = stats;
  // An agent that keeps its own interval is held to it; one that follows
  // is told the current one, which its next wait uses.
  if (waited_ms > 0) r.heartbeat_ms = IntervalLocked(r.heartbeat_factor);
  if (next_ms != nullptr) *next_ms = r.heartbeat_ms;
  return true;
}

uint64_t AgentDirectory::Leave(const std::string& id, uint64_t session) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it != members_.end() && it->second.session == session) {
    CountBeats(it->second, -1);
    const uint64_t weight = it->second.cache_bytes;
    members_.erase(it);
    Changed(id, weight, true);
  }
  return epoch_;
}

bool AgentDirectory::Contains(const std::string& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  return it != members_.end() &&
         now_ms - it->second.last_heartbeat_ms <= 3 * it->second.heartbeat_ms;
}

bool AgentDirectory::ReadingOrigin(const std::string& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end() || it->second.origin_read_ms == 0) return false;
  return now_ms - it->second.origin_read_ms <= 2 * it->second.heartbeat_ms;
}

void AgentDirectory::ExpireLocked(int64_t now_ms) {
  if (now_ms >= last_expire_ms_ && now_ms - last_expire_ms_ < kExpireEveryMs) return;
  last_expire_ms_ = now_ms;
  for (auto it = members_.begin(); it != members_.end();) {
    if (now_ms - it->second.last_heartbeat_ms > 3 * it->second.heartbeat_ms) {
      const std::string id = it->first;
      const uint64_t weight = it->second.cache_bytes;
      CountBeats(it->second, -1);
      it = members_.erase(it);
      Changed(id, weight, true);
    } else {
      ++it;
    }
  }
}

void AgentDirectory::Expire(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ms);
}

std::vector<AgentRecord> AgentDirectory::Members(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ms);
  std::vector<AgentRecord> out;
  out.reserve(members_.size());
  for (const auto& [id, r] : members_) out.push_back(r);
  std::sort(out.begin(), out.end(),
            [](const AgentRecord& a, const AgentRecord& b) { return a.id < b.id; });
  return out;
}

AgentDirectory::Counts AgentDirectory::Count(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ms);
  Counts c;
  c.members = members_.size();
  for (const auto& [id, r] : members_) c.away += r.heartbeat_factor > 1 ? 1 : 0;
  return c;
}

std::shared_ptr<const std::vector<RingMember>> AgentDirectory::RingMembers(int64_t now_ms,
                                                                           uint64_t* epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ms);
  if (ring_ == nullptr || ring_epoch_ != epoch_) {
    auto all = std::make_shared<std::vector<RingMember>>();
    all->reserve(members_.size());
    for (const auto& [id, r] : members_) all->push_back({id, r.cache_bytes});
    ring_ = std::move(all);
    ring_epoch_ = epoch_;
  }
  *epoch = ring_epoch_;
  return ring_;
}

bool AgentDirectory::RingChanges(uint64_t since_epoch, int64_t now_ms, RingChangeSink& sink,
                                 Detail detail) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ms);
  // The log holds every change after since_epoch when its oldest entry
  // made epoch since_epoch + 1 or an earlier one.
  if (since_epoch == 0 || since_epoch > epoch_ || log_.empty() ||
      log_.front().epoch > since_epoch + 1) {
    return false;
  }
  const size_t changes = epoch_ - since_epoch;
  if (changes >= members_.size() && changes > 0) return false;
  const auto from = log_.end() - static_cast<std::ptrdiff_t>(changes);
  const bool net = detail == Detail::kNet;
  size_t handed = changes;
  if (net) {
    handed = 0;
    for (auto it = from; it != log_.end(); ++it) handed += NetChange(*it, since_epoch) ? 1 : 0;
  }
  sink.Begin(epoch_, handed);
  for (auto it = from; it != log_.end(); ++it) {
    if (!net || NetChange(*it, since_epoch)) sink.Change(it->id, it->weight, it->left);
  }
  return true;
}

uint64_t AgentDirectory::epoch() {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

}  // namespace shoal::tracker
