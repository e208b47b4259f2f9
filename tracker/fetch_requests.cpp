#include "fetch_requests.h"

#include <algorithm>
#include <unordered_set>

#include "capnp_views.h"
#include "kj_status.h"
#include "record_codec.h"
#include "shoal/log.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

// The most chunks one need call may name.
constexpr size_t kMaxNeedChunks = 1 << 16;
// Warm progress goes to the listener at most this often.
constexpr int64_t kProgressEveryMs = 250;

// Warm progress, shared by the chunk watch and the node orders.
struct WarmState {
  std::shared_ptr<WarmWatch> watch = std::make_shared<WarmWatch>();
  kj::Maybe<proto::WarmListener::Client> listener;
  uint32_t nodes = 0, nodes_done = 0, nodes_failed = 0;
  int64_t last_progress_ms = 0;

  void Report(bool force) {
    KJ_IF_MAYBE (l, listener) {
      int64_t now = NowMs();
      if (!force && now - last_progress_ms < kProgressEveryMs) return;
      last_progress_ms = now;
      auto req = l->progressRequest();
      req.setChunksDone(watch->done);
      req.setChunks(watch->total);
      req.setNodesDone(nodes_done);
      req.setNodes(nodes);
      // Progress is advisory: a listener that went away does not fail the warm.
      req.send().detach([](kj::Exception&&) {});
    }
  }
};

}  // namespace

void AnswerNeed(FetchScheduler& fetches, const std::string& ns, const std::string& name,
                capnp::CallContext<proto::Registry::NeedParams, proto::Registry::NeedResults> c) {
  auto p = c.getParams();
  FetchTarget target{ns, name, ValueOrThrow(ParseVersionId(p.getVersionId()))};
  if (p.getChunks().size() > kMaxNeedChunks) {
    ThrowIfError(Status::InvalidArgument("need names " + std::to_string(p.getChunks().size()) +
                                         " chunks; ask for at most " +
                                         std::to_string(kMaxNeedChunks) + " at a time"));
  }
  auto known = fetches.VersionChunks(target);
  ThrowIfError(known.status().WithContext(ns + "/" + name));
  std::vector<ChunkId> chunks = ValueOrThrow(ParseChunkIds(p.getChunks()));
  for (const ChunkId& id : chunks) {
    if ((*known)->count(id) == 0) {
      ThrowIfError(Status::InvalidArgument("chunk " + id.ShortHex() + " is not part of " + ns +
                                           "/" + name + ":" + target.version.ShortHex()));
    }
  }
  FillNeedReply(fetches.Need(target, chunks), c.getResults());
}

Result<std::vector<std::string>> SelectNodes(AgentDirectory& agents, const AgentOrders& orders,
                                             const std::string& nodes) {
  std::vector<AgentRecord> live;
  for (AgentRecord& a : agents.Members(NowMs())) {
    if (orders.Connected(a.id)) live.push_back(std::move(a));
  }
  std::vector<std::string> out;
  if (nodes.empty()) return out;
  if (nodes == "all") {
    for (const AgentRecord& a : live) out.push_back(a.id);
    return out;
  }
  if (std::all_of(nodes.begin(), nodes.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    if (nodes.size() > 6) return Status::InvalidArgument("--nodes " + nodes + " is too many");
    size_t n = std::stoul(nodes);
    auto free_bytes = [](const AgentRecord& a) {
      return a.cache_bytes > a.stats.cached_bytes ? a.cache_bytes - a.stats.cached_bytes : 0;
    };
    std::stable_sort(live.begin(), live.end(), [&](const AgentRecord& a, const AgentRecord& b) {
      return free_bytes(a) > free_bytes(b);
    });
    for (size_t i = 0; i < live.size() && i < n; ++i) out.push_back(live[i].id);
    return out;
  }
  size_t eq = nodes.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidArgument("--nodes must be all, a count, or key=value; got '" +
                                   nodes.substr(0, 100) + "'");
  }
  for (const AgentRecord& a : live) {
    bool match = nodes.compare(0, eq, "zone") == 0 && eq == 4
                     ? a.zone == nodes.substr(eq + 1)
                     : std::count(a.labels.begin(), a.labels.end(), nodes) > 0;
    if (match) out.push_back(a.id);
  }
  return out;
}

kj::Promise<void> RunWarm(
    const WarmDeps& d, const std::string& ns, const std::string& name, const VersionId& id,
    const Manifest& m,
    capnp::CallContext<proto::Registry::WarmParams, proto::Registry::WarmResults> c) {
  auto p = c.getParams();
  Result<std::vector<std::string>> nodes = SelectNodes(d.agents, d.orders, Text(p.getNodes()));
  ThrowIfError(nodes.status());
  if (d.fetches.Ring()->size() == 0) ThrowIfError(Status::Unavailable("no live agents to warm"));
  std::vector<ChunkId> chunks;
  std::unordered_set<ChunkId> seen;
  for (const FileEntry& f : m.files) {
    for (const ChunkId& chunk : f.ChunkIds()) {
      if (seen.insert(chunk).second) chunks.push_back(chunk);
    }
  }
  std::set<std::string> owners;
  {
    auto ring = d.fetches.Ring();
    for (const ChunkId& chunk : chunks) owners.insert(ring->Owners(chunk, 1)[0]);
  }
  d.metrics.warms++;

  auto state = std::make_shared<WarmState>();
  if (p.hasListener()) state->listener = p.getListener();
  state->nodes = static_cast<uint32_t>(nodes->size());
  auto paf = kj::newPromiseAndFulfiller<void>();
  state->watch->finished = kj::mv(paf.fulfiller);
  std::weak_ptr<WarmState> weak = state;
  state->watch->on_change = [weak] {
    if (auto s = weak.lock()) s->Report(false);
  };

  kj::Vector<kj::Promise<void>> waits;
  waits.add(kj::mv(paf.promise));
  for (const std::string& node : *nodes) {
    kj::Promise<void> sent = d.orders.Prefetch(node, FetchTarget{ns, name, id});
    d.metrics.prefetch_orders++;
    waits.add(sent.then(
        [state]() {
          ++state->nodes_done;
          state->Report(false);
        },
        [state, node](kj::Exception&& e) {
          ++state->nodes_done;
          ++state->nodes_failed;
          Log(LogLevel::kWarn, "warm.prefetch_failed",
              {{"agent", node}, {"error", std::string(e.getDescription().cStr())}});
          state->Report(false);
        }));
  }
  d.fetches.Warm(FetchTarget{ns, name, id}, chunks, state->watch);
  auto results = c.getResults();
  results.setOwners(static_cast<uint32_t>(owners.size()));
  results.setChunks(static_cast<uint32_t>(chunks.size()));
  results.setNodes(state->nodes);
  return kj::joinPromises(waits.releaseAsArray()).then([c, state]() mutable {
    state->Report(true);
    auto r = c.getResults();
    r.setFetched(state->watch->fetched);
    r.setBytes(state->watch->bytes);
    r.setFailed(state->watch->failed);
    r.setNodesFailed(state->nodes_failed);
  });
}

}  // namespace shoal::tracker
