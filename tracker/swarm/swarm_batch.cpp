#include "swarm/swarm_batch.h"

#include <algorithm>
#include <cstring>

#include "common/tracker_metrics.h"
#include "proto/kj_status.h"
#include "shoal/utc_time.h"
#include "swarm/announce_policy.h"
#include "swarm/swarm_store.h"

namespace shoal::tracker {
namespace {

// What the entries of one batch reuse, so an entry allocates nothing of
// its own: the request (holder fields set once) and the reply's peer list.
struct BatchScratch {
  AnnounceRequest request;
  AnnounceReply reply;
};

// Records one entry and fills its reply; an empty string, or why it was refused.
std::string AnswerEntry(const AnnounceDeps& d, const SwarmSender& who, proto::SwarmEntry::Reader e,
                        int64_t now, BatchScratch& scratch, proto::SwarmReply::Builder out) {
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
  AnnounceRequest& a = scratch.request;
  std::memcpy(a.info_hash.data(), hash.begin(), 20);
  if (!stopped && !MayAnnounce(d.torrents, who.token, a.info_hash, now)) {
    d.metrics.announce_refused_torrent++;
    return kTorrentRefused;
  }
  a.self.ip = who.ip;
  a.self.port = e.getPort();
  a.self.seed = e.getState() == proto::SwarmEntry::State::SEEDING;
  auto zone = e.getZone();
  a.self.zone.assign(zone.begin(), std::min<size_t>(zone.size(), 64));
  a.event = stopped ? AnnounceRequest::Event::kStopped : AnnounceRequest::Event::kNone;
  a.numwant = e.getWantPeers() ? std::min<uint32_t>(kMaxNumwant, e.getNumwant()) : 0;
  AnnounceReply& reply = scratch.reply;
  Status s = d.swarm.Announce(a, now, &reply);
  if (!s.ok()) {
    d.metrics.announce_refused_full++;
    return s.message();
  }
  out.setComplete(reply.complete);
  out.setIncomplete(reply.incomplete);
  if (e.getWantPeers()) {
    const auto [n4, n6] = CompactSizes(reply.peers);
    WriteCompactPeers(reply.peers, out.initPeers(static_cast<unsigned>(n4)).begin(),
                      out.initPeers6(static_cast<unsigned>(n6)).begin());
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
  BatchScratch scratch;
  scratch.request.holder = who.holder;
  scratch.request.holder_agent = who.agent_id;
  for (unsigned i = 0; i < entries.size(); ++i) {
    std::string error = AnswerEntry(d, who, entries[i], now, scratch, replies[i]);
    if (!error.empty()) replies[i].setError(error);
  }
  out.setIntervalMs(static_cast<uint32_t>(d.announce_interval_ms));
  out.setSeedIntervalMs(static_cast<uint32_t>(d.seed_announce_interval_ms));
}

}  // namespace shoal::tracker
