// ChunkFetcher's lanes: a requester's queue of asks, most urgent first.
#include <algorithm>
#include <chrono>
#include <utility>

#include "fetch/chunk_fetcher.h"
#include "shoal/log.h"

namespace shoal {

ChunkFetcher::Lane::Lane(ChunkFetcher& fetcher, int parallelism)
    : fetcher_(fetcher),
      state_(std::make_shared<LaneState>()),
      queue_(std::clamp(parallelism, 1, 64)) {}

ChunkFetcher::Lane::~Lane() {
  // Its own asks under way end first (their callbacks may be its own);
  // then no callback of it runs again, from any thread.
  queue_.Cancel();
  fetcher_.CloseLane(state_);
}

void ChunkFetcher::JoinAsk(const std::shared_ptr<LaneState>& lane,
                           const std::shared_ptr<Ask>& ask) {
  bool first = false;
  ask->flight = Join(ask->fetch, lane, ask, &first);
}

void ChunkFetcher::Lane::Fetch(const ChunkFetch& fetch, Done done, FetchPriority priority) {
  {
    std::lock_guard<std::mutex> l(fetcher_.mu_);
    auto [it, added] = state_->open.try_emplace(fetch.id);
    if (!added) {
      // Asked already: at most more urgent now, or owned.
      Ask& ask = *it->second;
      if (fetch.owned) (ask.flight ? ask.flight->fetch : ask.fetch).owned = true;
      if (priority >= ask.priority) return;
      if (!ask.taken) {
        auto& from = state_->queued[static_cast<int>(ask.priority)];
        from.erase(std::find(from.begin(), from.end(), it->second));
        state_->queued[static_cast<int>(priority)].push_back(it->second);
      }
      ask.priority = priority;
      return;
    }
    auto ask = std::make_shared<Ask>();
    ask->fetch = fetch;
    ask->done = std::move(done);
    ask->priority = priority;
    it->second = ask;
    // Joined now, so others asking meanwhile join it, or run it if they
    // get to it first; an ask with a way elsewhere joins once that fails.
    if (!fetch.elsewhere) fetcher_.JoinAsk(state_, ask);
    state_->queued[static_cast<int>(priority)].push_back(std::move(ask));
  }
  // One turn per queued ask: each takes the most urgent one left.
  queue_.Post([this] { Next(); });
}

bool ChunkFetcher::Lane::Waiting(const ChunkId& id) const {
  std::lock_guard<std::mutex> l(fetcher_.mu_);
  return state_->open.count(id) != 0;
}

void ChunkFetcher::Lane::Next() {
  std::shared_ptr<Ask> ask;
  {
    std::lock_guard<std::mutex> l(fetcher_.mu_);
    for (auto& queue : state_->queued) {
      if (queue.empty()) continue;
      ask = std::move(queue.front());
      queue.pop_front();
      break;
    }
    if (ask == nullptr) return;
    ask->taken = true;
  }
  if (ask->fetch.elsewhere) {
    const auto start = std::chrono::steady_clock::now();
    Status s = ask->fetch.elsewhere();
    if (s.ok() || !s.IsUnavailable() || !fetcher_.has_origin()) {
      ChunkFetched r;
      r.status = s;
      r.joined = true;
      r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                 .count();
      fetcher_.Answer(state_, ask, r);
      if (s.ok() && ask->fetch.seed) fetcher_.SeedAfterFetch(*ask->fetch.seed, ask->fetch.id);
      return;
    }
    Log(LogLevel::kWarn, "fetch.origin_direct",
        {{"chunk", ask->fetch.id.ShortHex()}, {"why", s.ToString()}});
    std::lock_guard<std::mutex> l(fetcher_.mu_);
    fetcher_.JoinAsk(state_, ask);
  }
  fetcher_.Run(ask->flight);
}

void ChunkFetcher::CloseLane(const std::shared_ptr<LaneState>& lane) {
  std::unique_lock<std::mutex> l(mu_);
  lane->closed = true;
  cv_.wait(l, [&] { return lane->calling == 0; });
  for (auto it = flights_.begin(); it != flights_.end();) {
    Flight& f = *it->second;
    f.waiting.erase(std::remove_if(f.waiting.begin(), f.waiting.end(),
                                   [&](const Waiter& w) { return w.lane == lane; }),
                    f.waiting.end());
    // Nobody left to run or hear it: a later asker starts afresh.
    if (!f.started && f.waiting.empty()) {
      it = flights_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& queue : lane->queued) queue.clear();
  lane->open.clear();
}

}  // namespace shoal
