#include "agent_controls.h"

#include "capnp_views.h"

namespace shoal::tracker {

void AgentControls::Attach(const std::string& agent, uint64_t session,
                           proto::AgentControl::Client control) {
  controls_.erase(agent);
  controls_.emplace(agent, kj::heap<proto::AgentControl::Client>(kj::mv(control)));
  sessions_[agent] = session;
}

void AgentControls::Detach(const std::string& agent, uint64_t session) {
  auto it = sessions_.find(agent);
  if (it == sessions_.end() || it->second != session) return;
  sessions_.erase(it);
  controls_.erase(agent);
}

bool AgentControls::Connected(const std::string& agent) const {
  return controls_.count(agent) != 0;
}

kj::Promise<FetchOutcome> AgentControls::Fetch(const std::string& agent, const FetchTarget& target,
                                               const ChunkId& chunk, bool takeover) {
  auto req = controls_.at(agent)->fetchRequest();
  req.setNamespace(target.ns);
  req.setName(target.name);
  req.setVersionId(Raw(target.version));
  req.initChunks(1).set(0, Raw(chunk));
  req.setTakeover(takeover);
  return req.send().then([](capnp::Response<proto::AgentControl::FetchResults> r) {
    return FetchOutcome{r.getFetched(), r.getBytes()};
  });
}

kj::Promise<void> AgentControls::Replicate(const std::string& agent, const FetchTarget& target,
                                           const ChunkId& chunk) {
  auto req = controls_.at(agent)->replicateRequest();
  req.setNamespace(target.ns);
  req.setName(target.name);
  req.setVersionId(Raw(target.version));
  req.initChunks(1).set(0, Raw(chunk));
  return req.send().ignoreResult();
}

kj::Promise<void> AgentControls::Prefetch(const std::string& agent, const FetchTarget& target) {
  auto req = controls_.at(agent)->prefetchRequest();
  req.setNamespace(target.ns);
  req.setName(target.name);
  req.setVersionId(Raw(target.version));
  return req.send().ignoreResult();
}

}  // namespace shoal::tracker
