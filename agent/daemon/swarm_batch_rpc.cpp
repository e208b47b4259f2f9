#include "daemon/swarm_batch_rpc.h"

#include <memory>

#include "proto/kj_status.h"

namespace shoal {
namespace {

proto::SwarmEntry::State WireState(SwarmState s) {
  switch (s) {
    case SwarmState::kSeeding:
      return proto::SwarmEntry::State::SEEDING;
    case SwarmState::kStopped:
      return proto::SwarmEntry::State::STOPPED;
    default:
      return proto::SwarmEntry::State::DOWNLOADING;
  }
}

std::string Str(capnp::Data::Reader d) { return std::string(d.begin(), d.end()); }

}  // namespace

kj::Promise<void> SendSwarmBatch(proto::AgentSession::Client session, SwarmReports& reports,
                                 std::vector<SwarmChange> batch, const std::string& zone) {
  auto req = session.announceBatchRequest();
  auto entries = req.initEntries(static_cast<unsigned>(batch.size()));
  for (size_t i = 0; i < batch.size(); ++i) {
    const SwarmChange& c = batch[i];
    auto e = entries[static_cast<unsigned>(i)];
    e.setInfoHash(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(c.info_hash.data()), c.info_hash.size()));
    e.setState(WireState(c.state));
    e.setLeft(c.left);
    e.setPort(c.port);
    e.setZone(zone);
    e.setNumwant(c.numwant);
    e.setWantPeers(c.want_peers);
  }
  auto shared = std::make_shared<std::vector<SwarmChange>>(std::move(batch));
  return req.send().then(
      [&reports, shared](capnp::Response<proto::AgentSession::AnnounceBatchResults> r) {
        std::vector<SwarmAnswer> answers;
        for (auto in : r.getReplies()) {
          SwarmAnswer a;
          a.error = in.getError();
          a.peers4 = Str(in.getPeers());
          a.peers6 = Str(in.getPeers6());
          a.complete = in.getComplete();
          a.incomplete = in.getIncomplete();
          answers.push_back(std::move(a));
        }
        reports.Settle(std::move(*shared), answers, r.getIntervalMs(), r.getSeedIntervalMs());
      },
      [&reports, shared](kj::Exception&& e) {
        reports.Fail(std::move(*shared), StatusFromException(e, "tracker announceBatch"));
      });
}

}  // namespace shoal
