#include "server/connection_limits.h"

#include <algorithm>
#include <atomic>
#include <vector>

namespace shoal {

// Shared by a slot and its client's entry in the limits, so TryAdmit can
// see and evict an idle connection without calling into it.
struct SlotRecord {
  enum State : int { kBusy, kIdle, kEvicted };

  SlotRecord(std::string c, uint64_t o) : client(std::move(c)), order(o) {}

  const std::string client;  // "" for a client exempt from the per-client count
  const uint64_t order;      // admission order
  // kBusy -> kIdle -> kBusy ... from the connection's strand; kIdle ->
  // kEvicted from TryAdmit, for good.
  std::atomic<int> state{kBusy};
  std::function<void()> evict;  // protected by the limits' mu_
};

ConnectionSlot::ConnectionSlot(std::shared_ptr<ConnectionLimits> limits,
                               std::shared_ptr<SlotRecord> record)
    : limits_(std::move(limits)), record_(std::move(record)) {}

ConnectionSlot::ConnectionSlot(ConnectionSlot&& other) noexcept
    : limits_(std::move(other.limits_)), record_(std::move(other.record_)) {
  other.limits_.reset();
}

ConnectionSlot& ConnectionSlot::operator=(ConnectionSlot&& other) noexcept {
  if (this != &other) {
    Release();
    limits_ = std::move(other.limits_);
    record_ = std::move(other.record_);
    other.limits_.reset();
  }
  return *this;
}

ConnectionSlot::~ConnectionSlot() { Release(); }

void ConnectionSlot::Release() {
  if (!limits_) return;
  limits_->Release(*record_);
  limits_.reset();
  record_.reset();
}

void ConnectionSlot::SetEvictor(std::function<void()> evict) {
  limits_->SetEvictor(*record_, std::move(evict));
}

void ConnectionSlot::MarkIdle() {
  int busy = SlotRecord::kBusy;
  record_->state.compare_exchange_strong(busy, SlotRecord::kIdle);
}

bool ConnectionSlot::MarkBusy() {
  int idle = SlotRecord::kIdle;
  if (record_->state.compare_exchange_strong(idle, SlotRecord::kBusy)) return true;
  return idle != SlotRecord::kEvicted;  // `idle` now holds the state found
}

ConnectionSlot ConnectionLimits::TryAdmit(const std::string& client, Admission* why) {
  std::function<void()> evict;
  std::shared_ptr<SlotRecord> record;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto mine = client.empty() ? per_client_.end() : per_client_.find(client);
    size_t held = mine == per_client_.end() ? 0 : mine->second.size();
    *why = Admission::kAdmitted;
    if (open_ >= max_total_) {
      // The victim's client holds more than `held`, and at most
      // max_per_client_: the newcomer stays within its own limit.
      std::shared_ptr<SlotRecord> victim = EvictLocked(held);
      if (!victim) {
        *why = Admission::kTooManyInAll;
        return ConnectionSlot();
      }
      evict = victim->evict;
      *why = Admission::kAdmittedByEvicting;
    } else if (!client.empty() && held >= max_per_client_) {
      *why = Admission::kTooManyFromClient;
      return ConnectionSlot();
    }
    record = std::make_shared<SlotRecord>(client, admitted_++);
    if (!client.empty()) per_client_[client].emplace(record->order, record);
    ++open_;
    gauge_->Add(1);  // Add, not Set: servers sharing a registry and label sum up
  }
  // Outside the lock: the evictor only posts the close to its connection.
  if (evict) evict();
  return ConnectionSlot(shared_from_this(), std::move(record));
}

std::shared_ptr<SlotRecord> ConnectionLimits::EvictLocked(size_t held) {
  std::vector<const Slots*> richer;  // clients holding more than `held`
  for (const auto& entry : per_client_) {
    if (entry.second.size() > held) richer.push_back(&entry.second);
  }
  // The busiest first; a busiest client with no idle connection passes
  // the turn to the next.
  std::stable_sort(richer.begin(), richer.end(),
                   [](const Slots* a, const Slots* b) { return a->size() > b->size(); });
  for (const Slots* slots : richer) {
    for (const auto& entry : *slots) {
      int idle = SlotRecord::kIdle;
      if (entry.second->state.compare_exchange_strong(idle, SlotRecord::kEvicted)) {
        return entry.second;
      }
    }
  }
  return nullptr;
}

void ConnectionLimits::SetEvictor(SlotRecord& record, std::function<void()> evict) {
  std::lock_guard<std::mutex> lock(mu_);
  record.evict = std::move(evict);
}

size_t ConnectionLimits::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

void ConnectionLimits::Release(const SlotRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  --open_;
  gauge_->Add(-1);
  if (record.client.empty()) return;
  auto it = per_client_.find(record.client);
  if (it == per_client_.end()) return;
  it->second.erase(record.order);
  if (it->second.empty()) per_client_.erase(it);
}

}  // namespace shoal
