#include "daemon/swarm_reports.h"

#include <algorithm>
#include <utility>

#include "shoal/bencode_writer.h"
#include "shoal/decimal.h"

namespace shoal {
namespace {

// A number parameter of the announce, `fallback` when absent.
Result<uint64_t> Number(const std::map<std::string, std::string>& q, const char* key,
                        uint64_t fallback, uint64_t max) {
  auto it = q.find(key);
  if (it == q.end()) return fallback;
  Result<uint64_t> n = ParseDecimal(it->second, 0, max);
  if (!n.ok()) return n.status().WithContext(key);
  return n;
}

using Waiters = std::vector<std::pair<AnnounceDone, Result<std::string>>>;

void Answer(Waiters& waiters) {
  for (auto& [done, result] : waiters) done(std::move(result));
}

}  // namespace

Result<RelayedAnnounce> ParseRelayedAnnounce(const std::map<std::string, std::string>& query) {
  RelayedAnnounce a;
  auto hash = query.find("info_hash");
  if (hash == query.end() || hash->second.size() != 20) {
    return Status::InvalidArgument("info_hash must be 20 bytes");
  }
  a.info_hash = hash->second;
  auto event = query.find("event");
  if (event != query.end()) {
    if (event->second == "started") a.event = RelayedAnnounce::Event::kStarted;
    if (event->second == "completed") a.event = RelayedAnnounce::Event::kCompleted;
    if (event->second == "stopped") a.event = RelayedAnnounce::Event::kStopped;
  }
  Result<uint64_t> port = Number(query, "port", 0, 65535);
  SHOAL_RETURN_IF_ERROR(port.status());
  if (*port == 0) return Status::InvalidArgument("port: must be 1 to 65535");
  Result<uint64_t> left = Number(query, "left", 1, UINT64_MAX);
  SHOAL_RETURN_IF_ERROR(left.status());
  Result<uint64_t> numwant = Number(query, "numwant", 50, UINT32_MAX);
  SHOAL_RETURN_IF_ERROR(numwant.status());
  a.port = static_cast<uint16_t>(*port);
  a.left = *left;
  a.numwant = static_cast<uint32_t>(*numwant);
  return a;
}

void SwarmReports::Enqueue(const std::string& info_hash, Torrent& t) {
  if (t.queued) return;
  t.queued = true;
  queue_.push_back(info_hash);
}

std::string SwarmReports::Body(const SwarmAnswer& answer, bool seeding) const {
  // As the tracker's /announce answers: keys in sorted order.
  const int64_t interval_ms = seeding ? seed_interval_ms_ : interval_ms_;
  BencodeWriter w;
  w.BeginDict();
  w.Bytes("complete");
  w.Int(answer.complete);
  w.Bytes("incomplete");
  w.Int(answer.incomplete);
  w.Bytes("interval");
  w.Int(std::max<int64_t>(1, interval_ms / 1000));
  w.Bytes("min interval");
  w.Int(1);
  w.Bytes("peers");
  w.Bytes(answer.peers4);
  w.Bytes("peers6");
  w.Bytes(answer.peers6);
  w.End();
  return w.Take();
}

bool SwarmReports::Announce(const RelayedAnnounce& a, AnnounceDone done) {
  const SwarmState state = a.event == RelayedAnnounce::Event::kStopped ? SwarmState::kStopped
                           : a.left == 0                               ? SwarmState::kSeeding
                                                                       : SwarmState::kDownloading;
  std::unique_lock<std::mutex> lock(mu_);
  auto it = torrents_.find(a.info_hash);
  if (state == SwarmState::kStopped && it == torrents_.end()) {
    lock.unlock();
    answered_locally_++;
    done(Body(SwarmAnswer{}, false));
    return false;
  }
  Torrent& t = torrents_[a.info_hash];
  t.latest = SwarmChange{a.info_hash, state, a.left, a.port, a.numwant, false, {}};
  const bool unchanged = state == SwarmState::kSeeding && t.reported == SwarmState::kSeeding;
  if (state == SwarmState::kStopped || (unchanged && !t.queued)) {
    // A stop needs no peers; a seeder still seeding is held by the tracker.
    if (state == SwarmState::kStopped) Enqueue(a.info_hash, t);
    std::string body = Body(state == SwarmState::kStopped ? SwarmAnswer{} : t.last, unchanged);
    lock.unlock();
    answered_locally_++;
    done(std::move(body));
    return state == SwarmState::kStopped;
  }
  t.waiters.push_back(std::move(done));
  Enqueue(a.info_hash, t);
  return true;
}

std::vector<SwarmChange> SwarmReports::Take(size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SwarmChange> batch;
  while (!queue_.empty() && batch.size() < max) {
    auto it = torrents_.find(queue_.front());
    queue_.pop_front();
    if (it == torrents_.end()) continue;
    Torrent& t = it->second;
    t.queued = false;
    SwarmChange change = t.latest;
    change.want_peers = !t.waiters.empty();
    change.waiters = std::move(t.waiters);
    t.waiters.clear();
    batch.push_back(std::move(change));
  }
  changes_sent_ += batch.size();
  return batch;
}

void SwarmReports::Settle(std::vector<SwarmChange> sent, const std::vector<SwarmAnswer>& answers,
                          int64_t interval_ms, int64_t seed_interval_ms) {
  Waiters waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (interval_ms > 0) interval_ms_ = interval_ms;
    if (seed_interval_ms > 0) seed_interval_ms_ = seed_interval_ms;
    for (size_t i = 0; i < sent.size(); ++i) {
      SwarmChange& change = sent[i];
      SwarmAnswer answer;
      if (i < answers.size()) answer = answers[i];
      if (i >= answers.size()) answer.error = "no reply for this torrent";
      auto it = torrents_.find(change.info_hash);
      Result<std::string> result = Status::Unavailable("tracker: " + answer.error);
      if (answer.error.empty()) {
        result = Body(answer, change.state == SwarmState::kSeeding);
        if (it != torrents_.end()) {
          Torrent& t = it->second;
          t.reported = change.state == SwarmState::kStopped ? SwarmState::kNone : change.state;
          if (change.want_peers) t.last = answer;
          if (t.latest.state == SwarmState::kStopped && !t.queued) torrents_.erase(it);
        }
      }
      for (AnnounceDone& done : change.waiters) waiters.emplace_back(std::move(done), result);
    }
  }
  Answer(waiters);
}

void SwarmReports::Fail(std::vector<SwarmChange> sent, const Status& why) {
  Waiters waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (SwarmChange& change : sent) {
      auto it = torrents_.find(change.info_hash);
      if (it != torrents_.end()) it->second.reported = SwarmState::kNone;
      for (AnnounceDone& done : change.waiters) waiters.emplace_back(std::move(done), why);
    }
  }
  Answer(waiters);
}

bool SwarmReports::Resend() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = torrents_.begin(); it != torrents_.end();) {
    Torrent& t = it->second;
    t.reported = SwarmState::kNone;
    if (t.latest.state == SwarmState::kStopped && !t.queued) {
      it = torrents_.erase(it);  // the new session holds nothing to stop
      continue;
    }
    Enqueue(it->first, t);
    ++it;
  }
  return !queue_.empty();
}

void SwarmReports::DropQueued(const Status& why) {
  Waiters waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& hash : queue_) {
      auto it = torrents_.find(hash);
      if (it == torrents_.end()) continue;
      Torrent& t = it->second;
      t.queued = false;
      for (AnnounceDone& done : t.waiters) waiters.emplace_back(std::move(done), why);
      t.waiters.clear();
      if (t.latest.state == SwarmState::kStopped) torrents_.erase(it);
    }
    queue_.clear();
  }
  Answer(waiters);
}

bool SwarmReports::HasQueued() {
  std::lock_guard<std::mutex> lock(mu_);
  return !queue_.empty();
}

}  // namespace shoal
