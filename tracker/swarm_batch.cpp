#include "swarm_batch.h"

#include <algorithm>
#include <cstring>

#include "announce_policy.h"
#include "kj_status.h"
#include "shoal/utc_time.h"
#include "swarm_store.h"
#include "tracker_metrics.h"

namespace shoal::tracker {
namespace {

kj::ArrayPtr<const kj::byte> Bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

// Records one entry and fills its reply; an empty string, or why it was refused.
std::string AnswerEntry(const AnnounceDeps& d, const SwarmSender& who, proto::SwarmEntry::Reader e,
                        int64_t now, proto::SwarmReply::Builder out) {
  auto hash = e.getInfoHash();
  if (hash.size() != 20) {
    d.metrics.announce_refused_malformed++;
    return "infoHash must be 20 bytes";
  }
  const bool stopped = e.getState() == proto::SwarmEntry::State::STOPPED;
  if (!stopped && e.getPort() == 0) {
    d.metrics.announce_refused_malformed++;
    return "port must be 1 to 65535";
  }
  if (!stopped && who.ip.size == 0) return "the session's address is not an IP address";
  AnnounceRequest a;
  std::memcpy(a.info_hash.data(), hash.begin(), 20);
  if (!stopped && !MayAnnounce(d.torrents, who.token, a.info_hash, now)) {
    d.metrics.announce_refused_torrent++;
    return kTorrentRefused;
  }
  a.holder = who.holder;
  a.holder_agent = who.agent_id;
  a.self.ip = who.ip;
  a.self.port = e.getPort();
  a.self.seed = e.getState() == proto::SwarmEntry::State::SEEDING;
  auto zone = e.getZone();
  a.self.zone.assign(zone.begin(), std::min<size_t>(zone.size(), 64));
  if (stopped) a.event = AnnounceRequest::Event::kStopped;
  a.numwant = e.getWantPeers() ? std::min<uint32_t>(kMaxNumwant, e.getNumwant()) : 0;
  Result<AnnounceReply> reply = d.swarm.Announce(a, now);
  if (!reply.ok()) {
    d.metrics.announce_refused_full++;
    return reply.status().message();
  }
  out.setComplete(reply->complete);
  out.setIncomplete(reply->incomplete);
  if (e.getWantPeers()) {
    std::string v4, v6;
    CompactPeers(reply->peers, &v4, &v6);
    out.setPeers(Bytes(v4));
    out.setPeers6(Bytes(v6));
  }
  return "";
}

}  // namespace

void AnswerSwarmBatch(const AnnounceDeps& d, const SwarmSender& who,
                      capnp::List<proto::SwarmEntry>::Reader entries,
                      proto::AgentSession::AnnounceBatchResults::Builder out) {
  if (entries.size() > kMaxSwarmBatch) {
    ThrowIfError(Status::InvalidArgument("announceBatch carries " + std::to_string(entries.size()) +
                                         " entries, more than " + std::to_string(kMaxSwarmBatch) +
                                         ": send them in several batches"));
  }
  d.metrics.announce_batches++;
  d.metrics.announce_batch_entries += entries.size();
  const int64_t now = NowMs();
  auto replies = out.initReplies(entries.size());
  for (unsigned i = 0; i < entries.size(); ++i) {
    std::string error = AnswerEntry(d, who, entries[i], now, replies[i]);
    if (!error.empty()) replies[i].setError(error);
  }
  out.setIntervalMs(static_cast<uint32_t>(d.announce_interval_ms));
  out.setSeedIntervalMs(static_cast<uint32_t>(d.seed_announce_interval_ms));
}

}  // namespace shoal::tracker
