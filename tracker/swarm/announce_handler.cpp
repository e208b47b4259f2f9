#include "swarm/announce_handler.h"

#include <cstring>
#include <map>

#include "auth/token_verifier.h"
#include "common/tracker_metrics.h"
#include "shoal/token.h"
#include "shoal/utc_time.h"
#include "swarm/announce_numbers.h"
#include "swarm/announce_policy.h"
#include "swarm/swarm_store.h"
#include "swarm/torrent_index.h"

namespace shoal::tracker {
namespace {

void BString(const std::string& s, std::string* out) { *out += std::to_string(s.size()) + ":" + s; }

HttpResponse Bencoded(std::string body) {
  HttpResponse r;
  r.status = 200;
  r.headers.Set("Content-Type", "text/plain");
  r.body = std::move(body);
  return r;
}

// "127.0.0.1:5555" or "[::1]:5555" -> the address part.
std::string HostOf(const std::string& remote) {
  if (!remote.empty() && remote[0] == '[') return remote.substr(1, remote.find(']') - 1);
  return remote.substr(0, remote.rfind(':'));
}

}  // namespace

std::string BencodeFailure(const std::string& message) {
  std::string out = "d";
  BString("failure reason", &out);
  BString(message, &out);
  return out + "e";
}

HttpResponse HandleAnnounce(const AnnounceDeps& d, const HttpRequest& req) {
  d.metrics.announces++;
  const std::map<std::string, std::string>& q = req.query;  // binary-safe decoding
  auto get = [&](const char* k) {
    auto it = q.find(k);
    return it == q.end() ? std::string() : it->second;
  };
  auto refuse = [&](std::atomic<uint64_t>& counter, const std::string& message) {
    counter++;
    return Bencoded(BencodeFailure(message));
  };
  const int64_t now = NowMs();
  Result<TokenClaims> claims = d.tokens.Verify(get("token"), now);
  if (!claims.ok()) {
    d.metrics.auth_denied++;
    return refuse(d.metrics.announce_refused_token, claims.status().message());
  }
  AnnounceRequest a;
  std::string info_hash = get("info_hash");
  if (info_hash.size() != 20)
    return refuse(d.metrics.announce_refused_malformed, "info_hash must be 20 bytes");
  std::memcpy(a.info_hash.data(), info_hash.data(), 20);
  a.peer_id = get("peer_id");
  if (a.peer_id.size() != 20)
    return refuse(d.metrics.announce_refused_malformed, "peer_id must be 20 bytes");
  Result<AnnounceNumbers> numbers = ParseAnnounceNumbers(q);
  if (!numbers.ok())
    return refuse(d.metrics.announce_refused_malformed, numbers.status().message());
  if (!MayAnnounce(d.torrents, *claims, a.info_hash, now)) {
    return refuse(d.metrics.announce_refused_torrent, kTorrentRefused);
  }
  std::optional<PeerAddress> ip = PeerAddress::Parse(HostOf(req.remote_address));
  if (!ip) return refuse(d.metrics.announce_refused_malformed, "the sender is not an IP address");
  a.self.ip = *ip;
  a.self.port = numbers->port;
  a.self.seed = numbers->left == 0;
  a.self.zone = get("zone").substr(0, 64);
  std::string event = get("event");
  if (event == "started") a.event = AnnounceRequest::Event::kStarted;
  if (event == "completed") a.event = AnnounceRequest::Event::kCompleted;
  if (event == "stopped") a.event = AnnounceRequest::Event::kStopped;
  a.numwant = std::min<uint32_t>(kMaxNumwant, numbers->numwant);

  Result<AnnounceReply> announced = d.swarm.Announce(a, now);
  if (!announced.ok()) return refuse(d.metrics.announce_refused_full, announced.status().message());
  const AnnounceReply& reply = *announced;
  std::string peers4, peers6;
  CompactPeers(reply.peers, &peers4, &peers6);
  // A seeder has nothing left to learn from the swarm; others learn of it
  // from their own announces. It only has to stay listed, so it announces
  // far less often: an idle cluster costs the tracker little.
  const int64_t interval_ms = a.self.seed ? d.seed_announce_interval_ms : d.announce_interval_ms;
  const int64_t interval_s = std::max<int64_t>(1, interval_ms / 1000);
  std::string out = "d";
  BString("complete", &out);
  out += "i" + std::to_string(reply.complete) + "e";
  BString("incomplete", &out);
  out += "i" + std::to_string(reply.incomplete) + "e";
  BString("interval", &out);
  out += "i" + std::to_string(interval_s) + "e";
  BString("min interval", &out);
  out += "i1e";
  BString("peers", &out);
  BString(peers4, &out);
  BString("peers6", &out);
  BString(peers6, &out);
  return Bencoded(out + "e");
}

}  // namespace shoal::tracker
