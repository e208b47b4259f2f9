#include "connection_limits.h"

namespace shoal {

ConnectionSlot::ConnectionSlot(ConnectionSlot&& other) noexcept
    : limits_(std::move(other.limits_)), client_(std::move(other.client_)) {
  other.limits_.reset();
}

ConnectionSlot& ConnectionSlot::operator=(ConnectionSlot&& other) noexcept {
  if (this != &other) {
    Release();
    limits_ = std::move(other.limits_);
    client_ = std::move(other.client_);
    other.limits_.reset();
  }
  return *this;
}

ConnectionSlot::~ConnectionSlot() { Release(); }

void ConnectionSlot::Release() {
  if (!limits_) return;
  limits_->Release(client_);
  limits_.reset();
}

ConnectionSlot ConnectionLimits::TryAdmit(const std::string& client, Admission* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_ >= max_total_) {
    *why = Admission::kTooManyInAll;
    return ConnectionSlot();
  }
  if (!client.empty()) {
    size_t& mine = per_client_[client];
    if (mine >= max_per_client_) {
      *why = Admission::kTooManyFromClient;
      return ConnectionSlot();
    }
    ++mine;
  }
  ++open_;
  gauge_->Add(1);  // Add, not Set: servers sharing a registry and label sum up
  *why = Admission::kAdmitted;
  return ConnectionSlot(shared_from_this(), client);
}

size_t ConnectionLimits::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

void ConnectionLimits::Release(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  --open_;
  gauge_->Add(-1);
  if (client.empty()) return;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

}  // namespace shoal
