#include "scheduler/agent_controls.h"

#include <kj/debug.h>

#include <utility>

#include "proto/capnp_views.h"

namespace shoal::tracker {

void AgentControls::Attach(const std::string& agent, uint64_t session,
                           proto::AgentControl::Client control) {
  Control fresh;
  fresh.session = session;
  fresh.loop = kj::getCurrentThreadExecutor().addRef();
  fresh.client = kj::heap<proto::AgentControl::Client>(kj::mv(control));
  kj::Own<proto::AgentControl::Client> dropped;  // outside the lock
  std::lock_guard<std::mutex> l(mu_);
  auto it = controls_.find(agent);
  if (it == controls_.end()) {
    controls_.emplace(agent, kj::mv(fresh));
    return;
  }
  if (it->second.loop.get() == fresh.loop.get()) {
    dropped = kj::mv(it->second.client);
  } else {
    // The older registration's capability may only be dropped on its own
    // loop: it waits there for its session's Detach.
    retired_.emplace(it->second.session, kj::mv(it->second));
  }
  it->second = kj::mv(fresh);
}

void AgentControls::Detach(const std::string& agent, uint64_t session) {
  kj::Own<proto::AgentControl::Client> dropped;  // outside the lock
  std::lock_guard<std::mutex> l(mu_);
  auto old = retired_.find(session);
  if (old != retired_.end()) {
    dropped = kj::mv(old->second.client);
    retired_.erase(old);
  }
  auto it = controls_.find(agent);
  if (it == controls_.end() || it->second.session != session) return;
  dropped = kj::mv(it->second.client);
  controls_.erase(it);
}

bool AgentControls::Connected(const std::string& agent) const {
  std::lock_guard<std::mutex> l(mu_);
  return controls_.count(agent) != 0;
}

size_t AgentControls::connected() const {
  std::lock_guard<std::mutex> l(mu_);
  return controls_.size();
}

template <typename T, typename Send>
kj::Promise<T> AgentControls::OnControlLoop(const std::string& agent, Send send) {
  kj::Own<const kj::Executor> loop;
  uint64_t session = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = controls_.find(agent);
    if (it != controls_.end()) {
      loop = it->second.loop->addRef();
      session = it->second.session;
    }
  }
  // The agent may have gone between the caller's Connected() and here.
  if (loop.get() == nullptr || !loop->isLive()) {
    return KJ_EXCEPTION(DISCONNECTED, "agent's control connection closed", agent);
  }
  auto on_loop = [this, agent, session, send = kj::mv(send)]() mutable -> kj::Promise<T> {
    kj::Maybe<proto::AgentControl::Client> client;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = controls_.find(agent);
      // The same session means this is its loop's thread: copying the
      // capability here is safe.
      if (it != controls_.end() && it->second.session == session) client = *it->second.client;
    }
    KJ_IF_MAYBE (c, client) {
      return send(*c);
    }
    return KJ_EXCEPTION(DISCONNECTED, "agent's control connection closed", agent);
  };
  return kj::evalNow([&] { return loop->executeAsync(kj::mv(on_loop)); }).attach(kj::mv(loop));
}

kj::Promise<FetchOutcome> AgentControls::Fetch(const std::string& agent, const FetchTarget& target,
                                               const ChunkId& chunk, bool takeover) {
  return OnControlLoop<FetchOutcome>(
      agent, [target, chunk, takeover](proto::AgentControl::Client& control) {
        auto req = control.fetchRequest();
        req.setNamespace(target.ns);
        req.setName(target.name);
        req.setVersionId(Raw(target.version));
        req.initChunks(1).set(0, Raw(chunk));
        req.setTakeover(takeover);
        return req.send().then([](capnp::Response<proto::AgentControl::FetchResults> r) {
          return FetchOutcome{r.getFetched(), r.getBytes()};
        });
      });
}

kj::Promise<void> AgentControls::Replicate(const std::string& agent, const FetchTarget& target,
                                           const ChunkId& chunk) {
  return OnControlLoop<void>(agent, [target, chunk](proto::AgentControl::Client& control) {
    auto req = control.replicateRequest();
    req.setNamespace(target.ns);
    req.setName(target.name);
    req.setVersionId(Raw(target.version));
    req.initChunks(1).set(0, Raw(chunk));
    return req.send().ignoreResult();
  });
}

kj::Promise<void> AgentControls::Prefetch(const std::string& agent, const FetchTarget& target) {
  return OnControlLoop<void>(agent, [target](proto::AgentControl::Client& control) {
    auto req = control.prefetchRequest();
    req.setNamespace(target.ns);
    req.setName(target.name);
    req.setVersionId(Raw(target.version));
    return req.send().ignoreResult();
  });
}

}  // namespace shoal::tracker
