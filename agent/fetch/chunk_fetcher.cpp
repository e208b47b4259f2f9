#include "fetch/chunk_fetcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "p2p/torrent_engine.h"
#include "shoal/log.h"
#include "shoal/origin_fetch.h"

namespace shoal {

ChunkFetcher::ChunkFetcher(Origin* origin, ChunkStore& store, TorrentEngine* engine)
    : origin_(origin), store_(store), engine_(engine) {}

ChunkFetcher::~ChunkFetcher() = default;

std::unique_ptr<ChunkFetcher::Lane> ChunkFetcher::NewLane(int parallelism) {
  return std::unique_ptr<Lane>(new Lane(*this, parallelism));
}

Status ChunkFetcher::HandOver(const PieceAt& at) {
  if (engine_ == nullptr) return Status::OK();
  return engine_->ChunkArrived(at.torrent, at.piece);
}

std::shared_ptr<ChunkFetcher::Flight> ChunkFetcher::Join(const ChunkFetch& fetch,
                                                         std::shared_ptr<LaneState> lane,
                                                         std::shared_ptr<Ask> ask, bool* first) {
  std::shared_ptr<Flight>& flight = flights_[fetch.id];
  *first = flight == nullptr;
  if (*first) {
    flight = std::make_shared<Flight>();
    flight->fetch = fetch;
    flight->fetch.seed.reset();  // each waiter's own
    flight->fetch.elsewhere = nullptr;
  } else {
    flight->fetch.owned = flight->fetch.owned || fetch.owned;
    joins_++;
  }
  flight->waiting.push_back(Waiter{std::move(lane), std::move(ask), *first, fetch.seed});
  return flight;
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
  // After the callbacks: a reader waiting on the chunk goes first; the
  // hand-over reads the whole chunk.
  if (!r.status.ok()) return;
  std::vector<PieceAt> seeds;
  for (const Waiter& w : waiting) {
    if (!w.seed) continue;
    const bool seen = std::any_of(seeds.begin(), seeds.end(), [&](const PieceAt& s) {
      return s.torrent == w.seed->torrent && s.piece == w.seed->piece;
    });
    if (!seen) seeds.push_back(*w.seed);
  }
  for (const PieceAt& at : seeds) SeedAfterFetch(at, fetch.id);
}

void ChunkFetcher::SeedAfterFetch(const PieceAt& at, const ChunkId& chunk) {
  Status s = HandOver(at);
  // Unavailable: the torrent is being added again; its asker hands the
  // chunk over again once it is back.
  if (!s.ok()) {
    Log(s.IsUnavailable() ? LogLevel::kDebug : LogLevel::kWarn, "fetch.handover_failed",
        {{"chunk", chunk.ShortHex()}, {"error", s.ToString()}});
  }
}

void ChunkFetcher::Call(const Waiter& w, const ChunkFetched& result) {
  if (!w.ask) return;  // a FetchNow caller: it reads flight->result
  ChunkFetched r = result;
  if (!w.first) {
    r.joined = true;
    r.bytes = 0;
  }
  Answer(w.lane, w.ask, r);
}

void ChunkFetcher::Answer(const std::shared_ptr<LaneState>& lane, const std::shared_ptr<Ask>& ask,
                          const ChunkFetched& result) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (lane->closed) return;
    auto open = lane->open.find(ask->fetch.id);
    if (open != lane->open.end() && open->second == ask) lane->open.erase(open);
    ++lane->calling;
  }
  ask->done(result);
  {
    std::lock_guard<std::mutex> l(mu_);
    --lane->calling;
  }
  cv_.notify_all();
}

}  // namespace shoal
