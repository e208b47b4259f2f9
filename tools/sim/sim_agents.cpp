#include "sim/sim_agents.h"

#include <stdexcept>

#include "proto/kj_status.h"

namespace shoal::sim {

SimAgents::SimAgents(std::vector<std::string> ids, const std::vector<ChunkId>& chunks, Hooks hooks)
    : ids_(std::move(ids)),
      hooks_(std::move(hooks)),
      connected_(ids_.size(), false),
      held_(ids_.size()),
      copies_(ids_.size()) {
  for (size_t i = 0; i < ids_.size(); ++i) by_id_[ids_[i]] = static_cast<int>(i);
  for (size_t i = 0; i < chunks.size(); ++i) chunk_index_[chunks[i]] = static_cast<int>(i);
}

int SimAgents::node(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? -1 : it->second;
}

bool SimAgents::Connected(const std::string& agent) const {
  const int n = node(agent);
  return n >= 0 && connected_[static_cast<size_t>(n)];
}

void SimAgents::Connect(int node) {
  if (!connected_[static_cast<size_t>(node)]) ++count_;
  connected_[static_cast<size_t>(node)] = true;
}

void SimAgents::Drop(int node) {
  if (connected_[static_cast<size_t>(node)]) --count_;
  connected_[static_cast<size_t>(node)] = false;
  for (Held& h : held_[static_cast<size_t>(node)]) {
    h.answer->reject(
        ExceptionFromStatus(Status::Unavailable("agent " + id(node) + " disconnected")));
  }
  held_[static_cast<size_t>(node)].clear();
  for (HeldCopy& h : copies_[static_cast<size_t>(node)]) {
    h.answer->reject(
        ExceptionFromStatus(Status::Unavailable("agent " + id(node) + " disconnected")));
  }
  copies_[static_cast<size_t>(node)].clear();
  answered_ = true;
}

void SimAgents::Copied(int node, int chunk) {
  std::vector<HeldCopy>& held = copies_[static_cast<size_t>(node)];
  for (auto it = held.begin(); it != held.end();) {
    if (it->chunk != chunk) {
      ++it;
      continue;
    }
    it->answer->fulfill();
    it = held.erase(it);
    answered_ = true;
  }
}

void SimAgents::Delivered(int node, int chunk, uint64_t bytes) {
  std::vector<Held>& held = held_[static_cast<size_t>(node)];
  for (auto it = held.begin(); it != held.end();) {
    if (it->chunk != chunk) {
      ++it;
      continue;
    }
    it->answer->fulfill(tracker::FetchOutcome{1, bytes});
    bytes = 0;  // a second order for the same chunk fetched nothing more
    it = held.erase(it);
    answered_ = true;
  }
}

bool SimAgents::TakeAnswered() {
  const bool a = answered_;
  answered_ = false;
  return a;
}

kj::Promise<tracker::FetchOutcome> SimAgents::Fetch(const std::string& agent,
                                                    const tracker::FetchTarget&,
                                                    const ChunkId& chunk, bool takeover) {
  const int n = node(agent);
  auto c = chunk_index_.find(chunk);
  if (n < 0 || c == chunk_index_.end() || !connected_[static_cast<size_t>(n)])
    throw std::logic_error("SimAgents::Fetch: an order for an unknown agent or chunk");
  ++orders_;
  if (hooks_.holds(n, c->second)) {
    answered_ = true;  // the scheduler's continuation is ready to run
    return tracker::FetchOutcome{0, 0};
  }
  auto paf = kj::newPromiseAndFulfiller<tracker::FetchOutcome>();
  held_[static_cast<size_t>(n)].push_back({c->second, kj::mv(paf.fulfiller)});
  hooks_.start_fetch(n, c->second, takeover);
  return kj::mv(paf.promise);
}

kj::Promise<void> SimAgents::Replicate(const std::string& agent, const tracker::FetchTarget&,
                                       const ChunkId& chunk) {
  const int n = node(agent);
  auto c = chunk_index_.find(chunk);
  if (n < 0 || c == chunk_index_.end() || !connected_[static_cast<size_t>(n)])
    throw std::logic_error("SimAgents::Replicate: an order for an unknown agent or chunk");
  ++hand_on_orders_;
  if (hooks_.holds(n, c->second)) {
    answered_ = true;
    return kj::READY_NOW;
  }
  auto paf = kj::newPromiseAndFulfiller<void>();
  copies_[static_cast<size_t>(n)].push_back({c->second, kj::mv(paf.fulfiller)});
  hooks_.start_hand_on(n, c->second);
  return kj::mv(paf.promise);
}

kj::Promise<void> SimAgents::Prefetch(const std::string&, const tracker::FetchTarget&) {
  return kj::READY_NOW;
}

}  // namespace shoal::sim
