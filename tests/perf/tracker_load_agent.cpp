// tracker_load's simulated agents: the control capability each hands the
// tracker, and each agent's calls on it, as shoald makes them: register,
// announce, heartbeat, follow the ring, need a file's chunks.
#include <capnp/message.h>
#include <capnp/rpc-twoparty.h>
#include <capnp/serialize.h>
#include <kj/async-io.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "perf/tracker_load.h"
#include "proto/capnp_views.h"

namespace shoal::tracker_load {

std::vector<std::string> SnapshotMembers(capnp::Data::Reader bytes) {
  std::vector<std::string> ids;
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  if (words.size() == 0) return ids;
  std::memcpy(words.begin(), bytes.begin(), words.size() * sizeof(capnp::word));
  capnp::FlatArrayMessageReader message(words);
  for (auto m : message.getRoot<proto::RingSnapshot>().getMembers()) ids.push_back(m.getAgentId());
  return ids;
}

// Answers at once, as if the chunk were fetched. A fetch order is work
// that uses the ring: an idle agent starts following it, now.
kj::Promise<void> ControlImpl::fetch(FetchContext c) {
  c.getResults().setFetched(c.getParams().getChunks().size());
  stats_.ms[shared_.phase.load()][kFetchOrder].push_back(0);
  if (!shared_.o.orders_use_ring) return kj::READY_NOW;
  const bool was = agent_.Follows(shared_.o);
  agent_.ring_asked = Clock::now();
  if (!was && agent_.wake.get() != nullptr && agent_.wake->isWaiting()) agent_.wake->fulfill();
  return kj::READY_NOW;
}

kj::Promise<uint32_t> Worker::Register(Agent& a, kj::Own<kj::AsyncIoStream> stream) {
  a.stream = kj::mv(stream);
  a.network = kj::heap<capnp::TwoPartyVatNetwork>(*a.stream, capnp::rpc::twoparty::Side::CLIENT);
  a.rpc = kj::heap<capnp::RpcSystem<capnp::rpc::twoparty::VatId>>(capnp::makeRpcClient(*a.network));
  capnp::MallocMessageBuilder vat_msg(16);
  auto vat = vat_msg.getRoot<capnp::rpc::twoparty::VatId>();
  vat.setSide(capnp::rpc::twoparty::Side::SERVER);
  auto gateway = a.rpc->bootstrap(vat).castAs<proto::Gateway>();
  a.gateway = gateway;
  auto req = gateway.registerAgentRequest();
  req.setToken(shared_.o.token);
  auto info = req.initInfo();
  info.setName("load-" + std::to_string(a.index));
  info.setPeerPort(static_cast<uint16_t>(20000 + a.index % 40000));
  info.setCacheBytes(uint64_t{100} << 30);
  info.setVersion("tracker-load");
  req.setControl(kj::heap<ControlImpl>(stats_, shared_, a));
  auto start = Clock::now();
  auto disconnected = a.network->onDisconnect().then([]() -> uint32_t {
    kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "disconnected while registering"));
  });
  return req.send()
      .then(
          [this, &a, start](capnp::Response<proto::Gateway::RegisterAgentResults> r) {
            Record(kRegister, start);
            a.session = r.getSession();
            a.backoff_ms = 500;
            a.id = r.getAgentId();
            a.ring_of_session = false;  // a new session: the whole ring, when it follows
            return r.getHeartbeatMs();
          },
          [this](kj::Exception&& e) -> uint32_t {
            Failed(kRegister, e);
            kj::throwFatalException(kj::mv(e));
          })
      .exclusiveJoin(kj::mv(disconnected));
}

// One batch of every torrent: seeding, or (leech) downloading and
// wanting peers. Resolves to the tracker's announce interval.
kj::Promise<uint32_t> Worker::Announce(Agent& a, bool again) {
  KJ_IF_MAYBE (session, a.session) {
    auto req = session->announceBatchRequest();
    const auto& hashes = shared_.hashes;
    auto entries = req.initEntries(static_cast<unsigned>(hashes.size()));
    for (unsigned i = 0; i < hashes.size(); ++i) {
      auto e = entries[i];
      e.setInfoHash(Raw(hashes[i]));
      e.setState(a.leecher ? proto::SwarmEntry::State::DOWNLOADING
                           : proto::SwarmEntry::State::SEEDING);
      e.setLeft(a.leecher ? shared_.sizes[i] : 0);
      e.setPort(static_cast<uint16_t>(20000 + a.index % 40000));
      e.setNumwant(shared_.o.numwant);
      e.setWantPeers(true);
    }
    stats_.entries[phase()] += hashes.size();
    const Type type = again ? kLeechAnnounce : kAnnounce;
    auto start = Clock::now();
    return req.send().then(
        [this, &a, start, type](capnp::Response<proto::AgentSession::AnnounceBatchResults> r) {
          Record(type, start);
          for (auto reply : r.getReplies()) {
            if (reply.getError().size() > 0) {
              stats_.errors[phase()][type]++;
              stats_.last_error = std::string("entry: ") + reply.getError().cStr();
              break;
            }
          }
          if (type == kAnnounce) {
            a.up = true;
            if (!a.counted) shared_.joined++;
            a.counted = true;
            JoinedOrFailed(a);
          }
          return r.getIntervalMs();
        },
        [this, type](kj::Exception&& e) -> uint32_t {
          Failed(type, e);
          kj::throwFatalException(kj::mv(e));
        });
  }
  kj::throwFatalException(KJ_EXCEPTION(FAILED, "no session"));
}

// Heartbeats, and a leecher's re-announces, each from a random phase so
// the fleet's calls spread over the interval.
kj::Promise<void> Worker::Live(Agent& a, uint32_t heartbeat_ms, uint32_t interval_ms) {
  std::uniform_real_distribution<double> phase(0, 1);
  kj::Promise<void> beats = After(heartbeat_ms * phase(rng_)).then([this, &a, heartbeat_ms] {
    return HeartbeatLoop(a, heartbeat_ms);
  });
  kj::Promise<void> dead = a.network->onDisconnect();
  if (!a.leecher) return beats.exclusiveJoin(kj::mv(dead));
  kj::Promise<void> leech = After(interval_ms * phase(rng_)).then([this, &a, interval_ms] {
    return LeechLoop(a, interval_ms);
  });
  return beats.exclusiveJoin(kj::mv(leech)).exclusiveJoin(kj::mv(dead));
}

// Waits the interval the tracker told last, as shoald does.
kj::Promise<void> Worker::HeartbeatLoop(Agent& a, uint32_t heartbeat_ms) {
  auto next = [this, &a, heartbeat_ms] {
    const uint32_t ms = a.heartbeat_ms > 0 ? a.heartbeat_ms : heartbeat_ms;
    auto wake = kj::newPromiseAndFulfiller<void>();
    a.wake = kj::mv(wake.fulfiller);
    return After(ms).exclusiveJoin(kj::mv(wake.promise)).then([this, &a, ms] {
      return HeartbeatLoop(a, ms);
    });
  };
  if (a.index == 0 && shared_.freeze) return FrozenProbe(a);
  KJ_IF_MAYBE (session, a.session) {
    auto req = session->heartbeatRequest();
    req.initStats().setTorrents(static_cast<uint32_t>(shared_.hashes.size()));
    req.setRevocationsSeen(a.revocations_seen);
    req.setRevocationsSource(a.revocations_source);
    const bool follow = a.Follows(shared_.o);
    req.setRingSeen(follow && a.ring_of_session ? a.ring_epoch : 0);
    req.setHeartbeatMs(heartbeat_ms);
    if (follow) stats_.beats_following[phase()]++;
    auto start = Clock::now();
    return req.send()
        .then(
            [this, &a, start,
             follow](capnp::Response<proto::AgentSession::HeartbeatResults> r) -> bool {
              Record(kHeartbeat, start);
              if (a.index == 0) last_beat_ = start;
              if (r.getHeartbeatMs() > 0) a.heartbeat_ms = r.getHeartbeatMs();
              stats_.told_ms = std::max(stats_.told_ms, r.getHeartbeatMs());
              a.revocations_seen = r.getRevocations().getGeneration();
              a.revocations_source = r.getRevocations().getSource();
              if (r.getRing().getDelta()) {  // the ring's changes came with the heartbeat
                stats_.ring_members[shared_.phase.load()] += r.getRing().getChanges().size();
                a.ring_epoch = r.getEpoch();
              }
              // As shoald: following, a ring the heartbeat could not
              // bring is asked for; idle, none is.
              return follow && (!a.ring_of_session || r.getEpoch() != a.ring_epoch);
            },
            [this](kj::Exception&& e) -> bool {
              Failed(kHeartbeat, e);
              kj::throwFatalException(kj::mv(e));
            })
        .then(
            [this, &a](bool ask) { return ask ? FollowRing(a) : kj::Promise<void>(kj::READY_NOW); })
        .then(kj::mv(next));
  }
  kj::throwFatalException(KJ_EXCEPTION(FAILED, "no session"));
}

// AgentSession.ring since the epoch the agent holds (0: everyone).
kj::Promise<void> Worker::FollowRing(Agent& a) {
  KJ_IF_MAYBE (session, a.session) {
    auto req = session->ringRequest();
    req.setSinceEpoch(a.ring_of_session ? a.ring_epoch : 0);
    auto start = Clock::now();
    return req.send().then(
        [this, &a, start](capnp::Response<proto::AgentSession::RingResults> r) {
          Record(kRing, start);
          // As shoald does: read the snapshot's members, then the changes.
          const size_t members = r.getDelta() ? 0 : SnapshotMembers(r.getSnapshot()).size();
          stats_.ring_members[shared_.phase.load()] += members + r.getChanges().size();
          a.ring_epoch = r.getEpoch();
          a.ring_of_session = true;
        },
        [this](kj::Exception&& e) {
          Failed(kRing, e);
          kj::throwFatalException(kj::mv(e));
        });
  }
  kj::throwFatalException(KJ_EXCEPTION(FAILED, "no session"));
}

kj::Promise<void> Worker::LeechLoop(Agent& a, uint32_t interval_ms) {
  // The silent agent is silent on every call: a refused announce would
  // register it again, and the ring would list it again.
  if (a.index == 0 && shared_.freeze) return kj::NEVER_DONE;
  return Announce(a, true).then([this, &a](uint32_t next_ms) {
    return After(next_ms).then([this, &a, next_ms] { return LeechLoop(a, next_ms); });
  });
}

// Agent 0, silent but connected: probes its session with an empty batch
// (refused once the tracker counts it as gone) and asks the ring through
// another agent, every 100 ms, until both say it is gone.
kj::Promise<void> Worker::FrozenProbe(Agent& a) {
  // Timed from agent 0's last heartbeat, when the tracker last heard it.
  if (!frozen_) frozen_at_ = Clock::now();
  frozen_ = true;
  const double t = Since(last_beat_);
  if (Since(frozen_at_) > 60000) return kj::NEVER_DONE;
  kj::Promise<void> probe = kj::READY_NOW;
  KJ_IF_MAYBE (session, a.session) {
    if (shared_.dropped_ms < 0) {
      probe = session->announceBatchRequest().send().then(
          [](auto) {}, [this, t](kj::Exception&&) { shared_.dropped_ms = t; });
    }
  }
  Agent* observer = agents_.size() > 1 ? agents_[1].get() : nullptr;
  if (observer != nullptr && observer->up && shared_.ring_gone_ms < 0) {
    KJ_IF_MAYBE (session, observer->session) {
      probe = probe.then([this, &a, t, s = *session]() mutable {
        return s.ringRequest().send().then(
            [this, &a, t](capnp::Response<proto::AgentSession::RingResults> r) {
              // A whole ring (sinceEpoch 0): the snapshot, then the changes.
              bool listed = false;
              for (const std::string& id : SnapshotMembers(r.getSnapshot()))
                listed = listed || id == a.id;
              for (auto c : r.getChanges())
                if (c.getAgentId() == a.id) listed = !c.getLeft();
              if (!listed) shared_.ring_gone_ms = t;
            },
            [](kj::Exception&&) {});
      });
    }
  }
  return probe.then([this, &a] { return After(100).then([this, &a] { return FrozenProbe(a); }); });
}

void Worker::Need(Agent& a) {
  std::uniform_int_distribution<size_t> pick(0, shared_.chunks.size() - 1);
  const std::vector<std::string>& chunks = shared_.chunks[pick(rng_)];
  kj::Promise<proto::Registry::Client> registry = nullptr;
  KJ_IF_MAYBE (r, a.registry) {
    registry = *r;
  } else {
    KJ_IF_MAYBE (g, a.gateway) {
      auto req = g->authenticateRequest();
      req.setToken(shared_.o.token);
      auto start = Clock::now();
      registry = req.send().then(
          [this, &a, start](capnp::Response<proto::Gateway::AuthenticateResults> r) {
            Record(kAuthenticate, start);
            proto::Registry::Client reg = r.getRegistry();
            a.registry = reg;
            return reg;
          });
    } else {
      return;
    }
  }
  a.calls->add(registry
                   .then([this, &chunks](proto::Registry::Client reg) {
                     auto req = reg.needRequest();
                     req.setNamespace(shared_.o.ns);
                     req.setName(shared_.o.name);
                     req.setVersionId(Raw(shared_.version_id));
                     auto list = req.initChunks(static_cast<unsigned>(chunks.size()));
                     for (unsigned i = 0; i < chunks.size(); ++i) list.set(i, Raw(chunks[i]));
                     auto start = Clock::now();
                     return req.send().ignoreResult().then([this, start] { Record(kNeed, start); });
                   })
                   .catch_([this](kj::Exception&& e) { Failed(kNeed, e); }));
}

}  // namespace shoal::tracker_load
