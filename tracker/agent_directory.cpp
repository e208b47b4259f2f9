#include "agent_directory.h"

namespace shoal::tracker {

uint64_t AgentDirectory::Join(AgentRecord record, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  record.joined_ms = now_ms;
  record.last_heartbeat_ms = now_ms;
  members_[record.id] = std::move(record);
  return ++epoch_;
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
    ++epoch_;
  }
  return epoch_;
}

bool AgentDirectory::Contains(const std::string& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  return it != members_.end() && now_ms - it->second.last_heartbeat_ms <= 3 * heartbeat_ms_;
}

void AgentDirectory::Expire(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = members_.begin(); it != members_.end();) {
    if (now_ms - it->second.last_heartbeat_ms > 3 * heartbeat_ms_) {
      it = members_.erase(it);
      ++epoch_;
    } else {
      ++it;
    }
  }
}

std::vector<AgentRecord> AgentDirectory::Members(int64_t now_ms) {
  Expire(now_ms);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AgentRecord> out;
  for (const auto& [id, r] : members_) out.push_back(r);
  return out;
}

uint64_t AgentDirectory::epoch() {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

}  // namespace shoal::tracker
