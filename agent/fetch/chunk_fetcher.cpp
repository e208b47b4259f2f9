#include "fetch/chunk_fetcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "shoal/origin_fetch.h"

namespace shoal {

ChunkFetcher::ChunkFetcher(Origin* origin, ChunkStore& store) : origin_(origin), store_(store) {}

ChunkFetcher::~ChunkFetcher() = default;

ChunkFetcher::Lane::Lane(ChunkFetcher& fetcher, int parallelism)
    : fetcher_(fetcher),
      state_(std::make_shared<LaneState>()),
      queue_(std::clamp(parallelism, 1, 64)) {}

ChunkFetcher::Lane::~Lane() {
  // Its own fetches under way end first (their callbacks may be its own);
  // then no callback of it runs again, from any thread.
  queue_.Cancel();
  fetcher_.CloseLane(state_);
}

std::unique_ptr<ChunkFetcher::Lane> ChunkFetcher::NewLane(int parallelism) {
  return std::unique_ptr<Lane>(new Lane(*this, parallelism));
}

std::shared_ptr<ChunkFetcher::Flight> ChunkFetcher::Join(const ChunkFetch& fetch,
                                                         std::shared_ptr<LaneState> lane, Done done,
                                                         bool* first) {
  std::shared_ptr<Flight>& flight = flights_[fetch.id];
  *first = flight == nullptr;
  if (*first) {
    flight = std::make_shared<Flight>();
    flight->fetch = fetch;
  } else {
    flight->fetch.owned = flight->fetch.owned || fetch.owned;
    joins_++;
  }
  flight->waiting.push_back(Waiter{std::move(lane), std::move(done), *first});
  return flight;
}

void ChunkFetcher::Lane::Fetch(const ChunkFetch& fetch, Done done) {
  std::shared_ptr<Flight> flight;
  {
    std::lock_guard<std::mutex> l(fetcher_.mu_);
    bool first = false;
    flight = fetcher_.Join(fetch, state_, std::move(done), &first);
  }
  // Every asker offers to run it: whichever lane (or FetchNow) comes first
  // does, and a lane torn down with it queued leaves it to the others.
  ChunkFetcher* fetcher = &fetcher_;
  queue_.Post([fetcher, flight] { fetcher->Run(flight); });
}

ChunkFetched ChunkFetcher::FetchNow(const ChunkFetch& fetch) {
  std::shared_ptr<Flight> flight;
  bool first = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    flight = Join(fetch, nullptr, nullptr, &first);
  }
  Run(flight);
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return flight->finished; });
  ChunkFetched r = flight->result;
  if (!first) {
    r.joined = true;
    r.bytes = 0;
  }
  return r;
}

void ChunkFetcher::Run(const std::shared_ptr<Flight>& flight) {
  ChunkFetch fetch;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (flight->started) return;
    flight->started = true;
    fetch = flight->fetch;
  }
  const auto start = std::chrono::steady_clock::now();
  ChunkFetched r;
  if (origin_ == nullptr) {
    r.status = Status::Unavailable("this agent has no --origin to fetch from");
  } else {
    fetches_++;
    ChunkWriteOptions wo;
    wo.owned = fetch.owned;
    Result<uint64_t> sent =
        FetchChunkFromOrigin(*origin_, store_, fetch.id, fetch.size, wo, fetch.streamed);
    r.status = sent.status();
    r.bytes = sent.ok() ? *sent : 0;
  }
  r.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::vector<Waiter> waiting;
  bool owned_since = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    owned_since = flight->fetch.owned && !fetch.owned;
    auto it = flights_.find(fetch.id);
    if (it != flights_.end() && it->second == flight) flights_.erase(it);
  }
  // An owner joined after the fetch began: the chunk is its now too.
  if (owned_since && r.status.ok()) (void)store_.SetOwned(fetch.id, true);
  {
    std::lock_guard<std::mutex> l(mu_);
    flight->finished = true;
    flight->result = r;
    waiting = std::move(flight->waiting);
  }
  cv_.notify_all();
  for (const Waiter& w : waiting) Call(w, r);
}

void ChunkFetcher::Call(const Waiter& w, const ChunkFetched& result) {
  if (!w.done) return;  // a FetchNow caller: it reads flight->result
  {
    std::lock_guard<std::mutex> l(mu_);
    if (w.lane->closed) return;
    ++w.lane->calling;
  }
  ChunkFetched r = result;
  if (!w.first) {
    r.joined = true;
    r.bytes = 0;
  }
  w.done(r);
  {
    std::lock_guard<std::mutex> l(mu_);
    --w.lane->calling;
  }
  cv_.notify_all();
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
}

}  // namespace shoal
