// FakeTracker's RPC: the Gateway, AgentSession and Registry it serves, and
// the loop they run on. Its plain state and records: fake_tracker_state.cpp.
#include "daemon/fake_tracker.h"

#include <capnp/message.h>
#include <capnp/rpc-twoparty.h>
#include <capnp/serialize.h>
#include <kj/async-io.h>

#include <random>
#include <stdexcept>

#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal {
namespace testing {

// What lives on the fake's loop: the agents' control capabilities, newest last.
struct FakeTracker::LoopState {
  std::vector<proto::AgentControl::Client> controls;
};

template <typename Builder>
bool FakeTracker::FillChangesLocked(uint64_t since, Builder out) const {
  const uint64_t epoch = 1 + changes_.size();
  if (since == 0 || since > epoch) return false;
  auto list = out.initChanges(static_cast<unsigned>(epoch - since));
  for (uint64_t e = since + 1; e <= epoch; ++e) {
    const RingChange& c = changes_[e - 2].second;
    auto to = list[static_cast<unsigned>(e - since - 1)];
    to.setAgentId(c.id);
    to.setWeight(c.weight);
    to.setLeft(c.left);
  }
  out.setDelta(true);
  return true;
}

class FakeTracker::SessionImpl final : public proto::AgentSession::Server {
 public:
  explicit SessionImpl(FakeTracker& fake) : fake_(fake) {}

 protected:
  kj::Promise<void> heartbeat(HeartbeatContext c) override {
    auto p = c.getParams();
    auto results = c.getResults();
    results.setHeartbeatMs(fake_.options_.heartbeat_ms);
    {
      // One lock for the record, the epoch and its changes: they agree.
      std::lock_guard<std::mutex> lock(fake_.mu_);
      fake_.heartbeats_.push_back(
          {p.getRevocationsSeen(), p.getRevocationsSource(), p.getRingSeen()});
      const uint64_t epoch = 1 + fake_.changes_.size();
      results.setEpoch(epoch);
      const uint64_t seen = p.getRingSeen();
      if (fake_.heartbeat_deltas_ && seen != 0 && seen != epoch)
        fake_.FillChangesLocked(seen, results.initRing());
    }
    FillRevocations(p.getRevocationsSource(), p.getRevocationsSeen(), results.initRevocations());
    return kj::READY_NOW;
  }

  kj::Promise<void> ring(RingContext c) override {
    const uint64_t since = c.getParams().getSinceEpoch();
    auto results = c.getResults();
    std::lock_guard<std::mutex> lock(fake_.mu_);
    fake_.ring_calls_.push_back(since);
    results.setEpoch(1 + fake_.changes_.size());
    if (fake_.FillChangesLocked(since, results)) return kj::READY_NOW;
    // The ring at epoch 1, then every change after it.
    capnp::MallocMessageBuilder snapshot;
    const std::vector<RingMember>& members = fake_.options_.ring;
    auto list =
        snapshot.initRoot<proto::RingSnapshot>().initMembers(static_cast<unsigned>(members.size()));
    for (size_t i = 0; i < members.size(); ++i) {
      list[static_cast<unsigned>(i)].setAgentId(members[i].id);
      list[static_cast<unsigned>(i)].setWeight(members[i].weight);
    }
    kj::Array<capnp::word> words = capnp::messageToFlatArray(snapshot);
    results.setSnapshot(words.asBytes());
    results.setSnapshotEpoch(1);
    fake_.FillChangesLocked(1, results);
    results.setDelta(false);
    return kj::READY_NOW;
  }

 private:
  // As the real tracker: the revocations after `seen`, or all of them when
  // the agent's list came from another source.
  void FillRevocations(uint64_t source, uint64_t seen, proto::RevocationDelta::Builder out) {
    const RevocationList& list = fake_.revocations_;
    const uint64_t generation = list.generation();
    const bool reset = source != fake_.revocation_source_ || seen > generation;
    std::vector<Revocation> delta = list.Since(reset ? 0 : seen);
    out.setGeneration(delta.empty() ? generation : delta.back().seq);
    out.setReset(reset);
    out.setSource(fake_.revocation_source_);
    auto to = out.initRevocations(static_cast<unsigned>(delta.size()));
    for (size_t i = 0; i < delta.size(); ++i)
      FillRevocation(delta[i], to[static_cast<unsigned>(i)]);
  }

  FakeTracker& fake_;
};

class FakeTracker::RegistryImpl final : public proto::Registry::Server {
 public:
  explicit RegistryImpl(FakeTracker& fake) : fake_(fake) {}

 protected:
  kj::Promise<void> resolve(ResolveContext c) override {
    auto p = c.getParams();
    const std::string key =
        Text(p.getNamespace()) + "/" + Text(p.getName()) + ":" + Text(p.getRef());
    Published v;
    ManifestTamper tamper;
    {
      std::lock_guard<std::mutex> lock(fake_.mu_);
      fake_.resolves_.push_back(key);
      auto it = fake_.versions_.find(key);
      if (it == fake_.versions_.end()) ThrowIfError(Status::NotFound("no version " + key));
      v = it->second;
      tamper = fake_.tamper_;
    }
    const ManifestSigner& signer =
        tamper == ManifestTamper::kOtherKey ? *fake_.other_signer_ : *fake_.signer_;
    if (tamper == ManifestTamper::kOtherKey) v.signature = signer.Sign(v.id);
    if (tamper == ManifestTamper::kBytes) v.bytes[v.bytes.size() / 2] ^= 0x01;
    auto out = c.getResults().initSigned();
    out.setVersionId(Raw(v.id));
    out.setManifest(Raw(v.bytes));
    out.setSignature(Raw(v.signature));
    out.setSignerKeyId(signer.key_id());
    c.getResults().setState("durable");
    return kj::READY_NOW;
  }

  kj::Promise<void> need(NeedContext c) override {
    auto p = c.getParams();
    FakeNeed n{Text(p.getNamespace()), Text(p.getName()),
               ValueOrThrow(ParseVersionId(p.getVersionId())),
               ValueOrThrow(ParseChunkIds(p.getChunks()))};
    NeedAnswer answer;
    std::string error;
    {
      std::lock_guard<std::mutex> lock(fake_.mu_);
      fake_.needs_.push_back(n);
      answer = fake_.need_answer_;
      error = fake_.need_error_;
    }
    NeedReply reply;
    switch (answer) {
      case NeedAnswer::kVanish: {
        // Gone mid-call: the loop ends at its next turn and closes every
        // connection, this one's included.
        std::lock_guard<std::mutex> lock(fake_.mu_);
        if (fake_.stop_.get() != nullptr && fake_.stop_->isWaiting()) fake_.stop_->fulfill();
        return kj::NEVER_DONE;
      }
      case NeedAnswer::kFail:
        for (const ChunkId& chunk : n.chunks) reply.failed.emplace_back(chunk, error);
        break;
      case NeedAnswer::kQueue:
        reply.queued = static_cast<uint32_t>(n.chunks.size());
        break;
    }
    FillNeedReply(reply, c.getResults());
    return kj::READY_NOW;
  }

 private:
  FakeTracker& fake_;
};

class FakeTracker::GatewayImpl final : public proto::Gateway::Server {
 public:
  GatewayImpl(FakeTracker& fake, LoopState& loop) : fake_(fake), loop_(loop) {}

 protected:
  kj::Promise<void> authenticate(AuthenticateContext c) override {
    {
      std::lock_guard<std::mutex> lock(fake_.mu_);
      fake_.authentications_.push_back(Text(c.getParams().getToken()));
    }
    auto results = c.getResults();
    results.setRegistry(kj::heap<RegistryImpl>(fake_));
    auto id = results.initIdentity();
    id.setSubject("fake-reader");
    id.setRole(proto::Role::READ);
    id.initNamespaces(1).set(0, "*");
    id.setExpiresAtMs(INT64_MAX);
    return kj::READY_NOW;
  }

  kj::Promise<void> publicKey(PublicKeyContext c) override {
    c.getResults().setKeyId(fake_.signer_->key_id());
    c.getResults().setKey(Raw(fake_.signer_->public_key()));
    return kj::READY_NOW;
  }

  kj::Promise<void> registerAgent(RegisterAgentContext c) override {
    auto p = c.getParams();
    auto info = p.getInfo();
    FakeRegistration r{Text(p.getToken()),
                       Text(info.getName()),
                       Text(info.getZone()),
                       Text(p.getPeerKey()),
                       info.getPeerPort(),
                       info.getCacheBytes(),
                       {}};
    for (auto l : info.getLabels()) r.labels.push_back(Text(l));
    {
      std::lock_guard<std::mutex> lock(fake_.mu_);
      fake_.registrations_.push_back(std::move(r));
    }
    loop_.controls.push_back(p.getControl());
    auto results = c.getResults();
    results.setSession(kj::heap<SessionImpl>(fake_));
    results.setAgentId(fake_.options_.agent_id);
    results.setEpoch(fake_.epoch());
    results.setHeartbeatMs(fake_.options_.heartbeat_ms);
    return kj::READY_NOW;
  }

 private:
  FakeTracker& fake_;
  LoopState& loop_;
};

capnp::Capability::Client FakeTracker::NewGateway(LoopState& loop) {
  return kj::heap<GatewayImpl>(*this, loop);
}

FakeTracker::FakeTracker(Options options)
    : options_(std::move(options)),
      signer_(NewTestSigner()),
      other_signer_(NewTestSigner()),
      revocation_source_(std::random_device{}() | 1),
      thread_([this] { Serve(); }) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return ready_; });
  if (!listen_error_.empty()) {
    lock.unlock();
    thread_.join();
    throw std::runtime_error("fake tracker: " + listen_error_);
  }
}

FakeTracker::~FakeTracker() { Stop(); }

void FakeTracker::Serve() {
  auto io = kj::setupAsyncIo();
  auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
  LoopState loop;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 auto address = io.provider->getNetwork()
                                    .parseAddress("127.0.0.1", options_.port)
                                    .wait(io.waitScope);
                 auto listener = address->listen();
                 capnp::TwoPartyServer server(NewGateway(loop));
                 auto served = server.listen(*listener);
                 {
                   std::lock_guard<std::mutex> lock(mu_);
                   port_ = static_cast<uint16_t>(listener->getPort());
                   executor_ = kj::getCurrentThreadExecutor().addRef();
                   stop_ = kj::mv(stop.fulfiller);
                   loop_ = &loop;
                   ready_ = running_ = true;
                 }
                 cv_.notify_all();
                 stop.promise.exclusiveJoin(kj::mv(served)).wait(io.waitScope);
                 {
                   std::lock_guard<std::mutex> lock(mu_);
                   running_ = false;
                   loop_ = nullptr;
                 }
                 // Capabilities first, then the server: its connections close.
                 loop.controls.clear();
               })) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_) listen_error_ = e->getDescription().cStr();
  }
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = true;
  running_ = false;
  loop_ = nullptr;
  executor_ = nullptr;
  cv_.notify_all();
}

void FakeTracker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_.get() != nullptr && stop_->isWaiting()) stop_->fulfill();
  }
  if (thread_.joinable()) thread_.join();
}

bool FakeTracker::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

FakeOrderResult FakeTracker::OrderFetch(const std::string& ns, const std::string& name,
                                        const VersionId& version,
                                        const std::vector<ChunkId>& chunks, bool takeover) {
  kj::Own<const kj::Executor> executor;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return {false, 0, 0, "the fake tracker is stopped"};
    executor = executor_->addRef();
  }
  FakeOrderResult out;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 out = executor->executeSync([&]() -> kj::Promise<FakeOrderResult> {
                   LoopState* loop;
                   {
                     std::lock_guard<std::mutex> lock(mu_);
                     loop = loop_;
                   }
                   if (loop == nullptr || loop->controls.empty())
                     return FakeOrderResult{false, 0, 0, "no agent registered"};
                   auto req = loop->controls.back().fetchRequest();
                   req.setNamespace(ns);
                   req.setName(name);
                   req.setVersionId(Raw(version));
                   SetChunkIds(chunks, req.initChunks(static_cast<unsigned>(chunks.size())));
                   req.setTakeover(takeover);
                   return req.send().then(
                       [](capnp::Response<proto::AgentControl::FetchResults> r) {
                         return FakeOrderResult{true, r.getFetched(), r.getBytes(), ""};
                       },
                       [](kj::Exception&& e) {
                         return FakeOrderResult{false, 0, 0, e.getDescription().cStr()};
                       });
                 });
               })) {
    out = {false, 0, 0, e->getDescription().cStr()};
  }
  return out;
}

}  // namespace testing
}  // namespace shoal
