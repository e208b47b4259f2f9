#include "daemon/announce_relay.h"

#include <openssl/rand.h>

#include <algorithm>
#include <map>

#include "daemon/swarm_batch_rpc.h"
#include "shoal/hex.h"
#include "shoal/log.h"
#include "shoal/sha256.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

// Swarm changes that arrive within kGatherMs of the first go in one batch:
// a pull that starts 200 torrents makes one call, not 200. And batches go
// at most every kSpacingMs, so a stream of changes (torrents of a pull
// completing one by one) costs the tracker a few calls a second at most.
constexpr int64_t kGatherMs = 30;
constexpr int64_t kSpacingMs = 250;

// The rank of `address` for `info_hash`: the first 8 bytes of a SHA-256 of
// both, the same on every agent.
uint64_t Score(const std::string& info_hash, const std::string& address) {
  Sha256 h;
  h.Update(info_hash.data(), info_hash.size());
  h.Update(address.data(), address.size());
  auto digest = h.Finish();
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | digest.data()[i];
  return v;
}

}  // namespace

int RankFirst(const std::string& info_hash, const std::vector<SwarmRoute>& routes) {
  int best = -1;
  uint64_t best_score = 0;
  for (size_t i = 0; i < routes.size(); ++i) {
    if (routes[i].session == nullptr) continue;
    uint64_t s = Score(info_hash, routes[i].address);
    if (best < 0 || s > best_score) {
      best = static_cast<int>(i);
      best_score = s;
    }
  }
  return best;
}

AnnounceRelay::AnnounceRelay(kj::AsyncIoContext& io, std::string zone, std::string host,
                             std::function<std::vector<SwarmRoute>()> routes)
    : io_(io), zone_(std::move(zone)), host_(std::move(host)), routes_(std::move(routes)) {}

std::string AnnounceRelay::url() const {
  std::lock_guard<std::mutex> lock(mu_);
  return url_;
}

Status AnnounceRelay::Start() {
  uint8_t key[16];
  if (RAND_bytes(key, sizeof(key)) != 1) return Status::IOError("cannot draw a relay key");
  const std::string path = "/announce/" + hex::Encode(key, sizeof(key));
  HttpServerOptions o;
  o.address = host_;
  o.threads = 1;
  server_ = std::make_unique<HttpServer>(o);
  server_->HandleAsync(
      "GET", "/announce/*", [this, path](const HttpRequest& req, HttpResponder respond) {
        if (req.path != path) {
          return respond(HttpResponse::Error(404, "no such relay"));
        }
        Announce(req, [respond](Result<std::string> body) {
          if (!body.ok()) {
            // libtorrent reads a failure reason and retries later.
            std::string why = body.status().ToString();
            return respond(HttpResponse::Text(
                200, "d14:failure reason" + std::to_string(why.size()) + ":" + why + "e"));
          }
          respond(HttpResponse::Text(200, std::move(body).value()));
        });
      });
  errors_ = kj::heap<TaskErrorLog>(LogLevel::kWarn, "tracker.announce_relay_failed");
  sends_ = kj::heap<kj::TaskSet>(*errors_);
  SHOAL_RETURN_IF_ERROR(server_->Start().WithContext("announce relay"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool v6 = host_.find(':') != std::string::npos;
    url_ = "http://" + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(server_->port()) +
           path + (zone_.empty() ? "" : "?zone=" + zone_);
  }
  loop_ = Loop().eagerlyEvaluate([](kj::Exception&& e) {
    Log(LogLevel::kError, "tracker.announce_relay_stopped",
        {{"error", std::string(e.getDescription().cStr())}});
  });
  return Status::OK();
}

void AnnounceRelay::Stop() {
  if (!server_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  reports_.DropQueued(Status::Unavailable("the agent is stopping"));
  // Cancels the batches in flight, and with them their responders, which
  // must go before the server stops.
  loop_ = nullptr;
  sends_ = kj::heap<kj::TaskSet>(*errors_);
  server_->Stop();
}

void AnnounceRelay::SessionsChanged() {
  if (reports_.Resend()) Wake();
}

void AnnounceRelay::Announce(const HttpRequest& req, AnnounceDone done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return done(Status::Unavailable("the agent is stopping"));
  }
  Result<RelayedAnnounce> a = ParseRelayedAnnounce(req.query);
  if (!a.ok()) return done(a.status().WithContext("relayed announce"));
  if (reports_.Announce(*a, std::move(done))) Wake();
}

void AnnounceRelay::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  if (wake_) {
    wake_->fulfill();
    wake_ = nullptr;
  }
}

kj::Promise<void> AnnounceRelay::Loop() {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reports_.HasQueued()) {
      paf.fulfiller->fulfill();
    } else {
      wake_ = kj::mv(paf.fulfiller);
    }
  }
  return paf.promise
      .then([this] {
        const int64_t wait = std::max(kGatherMs, last_batch_ms_ + kSpacingMs - NowMs());
        return io_.provider->getTimer().afterDelay(wait * kj::MILLISECONDS);
      })
      .then([this] {
        last_batch_ms_ = NowMs();
        SendQueued();
        return Loop();
      });
}

void AnnounceRelay::SendQueued() {
  std::vector<SwarmRoute> routes = routes_();
  for (;;) {
    std::vector<SwarmChange> taken = reports_.Take(kMaxSwarmBatch);
    if (taken.empty()) return;
    // Each change to the tracker its swarm lives on.
    std::map<int, std::vector<SwarmChange>> by_route;
    std::vector<SwarmChange> unroutable;
    for (SwarmChange& c : taken) {
      int to = RankFirst(c.info_hash, routes);
      if (to < 0) {
        unroutable.push_back(std::move(c));
      } else {
        by_route[to].push_back(std::move(c));
      }
    }
    if (!unroutable.empty()) {
      reports_.Fail(std::move(unroutable),
                    Status::Unavailable("not registered with any tracker yet"));
    }
    for (auto& [to, batch] : by_route) {
      sends_->add(SendSwarmBatch(*routes[static_cast<size_t>(to)].session, reports_,
                                 std::move(batch), zone_));
    }
  }
}

}  // namespace shoal
