#include "agent_directory.h"

#include <unordered_map>

namespace shoal::tracker {

void AgentDirectory::Changed(const std::string& id, uint64_t weight, bool joined) {
  ++epoch_;
  log_.push_back({epoch_, id, weight, joined});
  if (log_.size() > kRingLogSize) log_.pop_front();
}

uint64_t AgentDirectory::Join(AgentRecord record, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  record.joined_ms = now_ms;
  record.last_heartbeat_ms = now_ms;
  const std::string id = record.id;
  const uint64_t weight = record.cache_bytes;
  members_[id] = std::move(record);
  Changed(id, weight, true);
  return epoch_;
}

bool AgentDirectory::Heartbeat(const std::string& id, const AgentStats& stats, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return false;
  it->second.last_heartbeat_ms = now_ms;
  it->second.stats = stats;
  return true;
}

uint64_t AgentDirectory::Leave(const std::string& id, uint64_t session) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it != members_.end() && it->second.session == session) {
    members_.erase(it);
    Changed(id, 0, false);
  }
  return epoch_;
}

bool AgentDirectory::Contains(const std::string& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  return it != members_.end() && now_ms - it->second.last_heartbeat_ms <= 3 * heartbeat_ms_;
}

void AgentDirectory::ExpireLocked(int64_t now_ms) {
  if (now_ms >= last_expire_ms_ && now_ms - last_expire_ms_ < kExpireEveryMs) return;
  last_expire_ms_ = now_ms;
  for (auto it = members_.begin(); it != members_.end();) {
    if (now_ms - it->second.last_heartbeat_ms > 3 * heartbeat_ms_) {
      const std::string id = it->first;
      it = members_.erase(it);
      Changed(id, 0, false);
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
  return out;
}

RingView AgentDirectory::Ring(uint64_t since_epoch, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ms);
  RingView view;
  view.epoch = epoch_;
  // The log covers every change after since_epoch when its oldest entry
  // made epoch since_epoch + 1 or earlier.
  const bool covered = since_epoch != 0 && since_epoch <= epoch_ && !log_.empty() &&
                       log_.front().epoch <= since_epoch + 1;
  const size_t changes = covered ? epoch_ - since_epoch : 0;
  if (covered && changes < members_.size()) {
    view.delta = true;
    // The last change of each agent decides.
    std::unordered_map<std::string, const Change*> last;
    for (auto it = log_.end() - static_cast<std::ptrdiff_t>(changes); it != log_.end(); ++it)
      last[it->id] = &*it;
    auto joined = std::make_shared<std::vector<RingMember>>();
    for (const auto& [id, c] : last) {
      if (c->joined) {
        joined->push_back({id, c->weight});
      } else {
        view.left.push_back(id);
      }
    }
    view.members = std::move(joined);
    return view;
  }
  if (ring_ == nullptr || ring_epoch_ != epoch_) {
    auto all = std::make_shared<std::vector<RingMember>>();
    all->reserve(members_.size());
    for (const auto& [id, r] : members_) all->push_back({id, r.cache_bytes});
    ring_ = std::move(all);
    ring_epoch_ = epoch_;
  }
  view.members = ring_;
  return view;
}

uint64_t AgentDirectory::epoch() {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

}  // namespace shoal::tracker
