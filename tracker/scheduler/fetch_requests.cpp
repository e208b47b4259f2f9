#include "scheduler/fetch_requests.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <unordered_set>

#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "shoal/log.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

// The most chunks one need call may name.
constexpr size_t kMaxNeedChunks = 1 << 16;
// Warm progress goes to the listener at most this often.
constexpr int64_t kProgressEveryMs = 250;

// A warm's figures so far, as its listener hears them.
struct WarmProgress {
  uint32_t chunks_done = 0, chunks = 0, nodes_done = 0, nodes = 0;
};

// The warm's call and its listener, on the caller's loop. The scheduler's
// loop reaches it only through Post, so the listener is used, and dropped,
// on its own loop.
class WarmListenerBox {
 public:
  explicit WarmListenerBox(kj::Maybe<proto::WarmListener::Client> listener)
      : listener_(kj::mv(listener)) {}

  void Send(const WarmProgress& n) {
    KJ_IF_MAYBE (l, listener_) {
      auto req = l->progressRequest();
      req.setChunksDone(n.chunks_done);
      req.setChunks(n.chunks);
      req.setNodesDone(n.nodes_done);
      req.setNodes(n.nodes);
      // Progress is advisory: a listener that went away does not fail the warm.
      req.send().detach([](kj::Exception&&) {});
    }
  }

  // A function, callable on any loop, that sends progress to `box`'s
  // listener on this loop while the box lives.
  static std::function<void(const WarmProgress&)> Post(
      const std::shared_ptr<WarmListenerBox>& box) {
    auto loop =
        std::make_shared<kj::Own<const kj::Executor>>(kj::getCurrentThreadExecutor().addRef());
    std::weak_ptr<WarmListenerBox> weak = box;
    return [loop, weak](const WarmProgress& n) {
      (*loop)
          ->executeAsync([weak, n] {
            if (auto b = weak.lock()) b->Send(n);
          })
          .detach([](kj::Exception&&) {});
    };
  }

 private:
  kj::Maybe<proto::WarmListener::Client> listener_;
};

// What the scheduler's loop answers for a warm.
struct WarmTotals {
  uint32_t owners = 0, chunks = 0, nodes = 0, nodes_failed = 0;
  uint32_t fetched = 0, failed = 0;
  uint64_t bytes = 0;
  WarmProgress last;  // the listener's last word, sent before the answer
};

// Warm progress on the scheduler's loop, shared by the chunk watch and the
// node orders.
struct WarmState {
  std::shared_ptr<WarmWatch> watch = std::make_shared<WarmWatch>();
  std::function<void(const WarmProgress&)> post;
  uint32_t nodes = 0, nodes_done = 0, nodes_failed = 0;
  int64_t last_progress_ms = 0;

  WarmProgress Now() const { return WarmProgress{watch->done, watch->total, nodes_done, nodes}; }
  void Report() {
    int64_t now = NowMs();
    if (now - last_progress_ms < kProgressEveryMs) return;
    last_progress_ms = now;
    post(Now());
  }
};

// The warm's work, on the scheduler's loop.
kj::Promise<WarmTotals> WarmOnSchedulerLoop(const WarmDeps& d, const FetchTarget& target,
                                            const std::string& node_names,
                                            const std::vector<ChunkId>& chunks,
                                            std::function<void(const WarmProgress&)> post) {
  Result<std::vector<std::string>> nodes = SelectNodes(d.agents, d.orders, node_names);
  ThrowIfError(nodes.status());
  if (d.fetches.Ring()->size() == 0) ThrowIfError(Status::Unavailable("no live agents to warm"));
  std::set<std::string> owners;
  {
    auto ring = d.fetches.Ring();
    for (const ChunkId& chunk : chunks) owners.insert(ring->Owners(chunk, 1)[0]);
  }
  d.metrics.warms++;

  auto state = std::make_shared<WarmState>();
  state->post = kj::mv(post);
  state->nodes = static_cast<uint32_t>(nodes->size());
  auto paf = kj::newPromiseAndFulfiller<void>();
  state->watch->finished = kj::mv(paf.fulfiller);
  std::weak_ptr<WarmState> weak = state;
  state->watch->on_change = [weak] {
    if (auto s = weak.lock()) s->Report();
  };

  kj::Vector<kj::Promise<void>> waits;
  waits.add(kj::mv(paf.promise));
  for (const std::string& node : *nodes) {
    kj::Promise<void> sent = d.orders.Prefetch(node, target);
    d.metrics.prefetch_orders++;
    waits.add(sent.then(
        [state]() {
          ++state->nodes_done;
          state->Report();
        },
        [state, node](kj::Exception&& e) {
          ++state->nodes_done;
          ++state->nodes_failed;
          Log(LogLevel::kWarn, "warm.prefetch_failed",
              {{"agent", node}, {"error", std::string(e.getDescription().cStr())}});
          state->Report();
        }));
  }
  d.fetches.Warm(target, chunks, state->watch);
  WarmTotals totals;
  totals.owners = static_cast<uint32_t>(owners.size());
  totals.chunks = static_cast<uint32_t>(chunks.size());
  totals.nodes = state->nodes;
  return kj::joinPromises(waits.releaseAsArray()).then([state, totals]() mutable {
    totals.last = state->Now();
    totals.fetched = state->watch->fetched;
    totals.bytes = state->watch->bytes;
    totals.failed = state->watch->failed;
    totals.nodes_failed = state->nodes_failed;
    return totals;
  });
}

}  // namespace

kj::Promise<void> AnswerNeed(
    const WarmDeps& d, const std::string& ns, const std::string& name,
    capnp::CallContext<proto::Registry::NeedParams, proto::Registry::NeedResults> c) {
  auto p = c.getParams();
  FetchTarget target{ns, name, ValueOrThrow(ParseVersionId(p.getVersionId()))};
  if (p.getChunks().size() > kMaxNeedChunks) {
    ThrowIfError(Status::InvalidArgument("need names " + std::to_string(p.getChunks().size()) +
                                         " chunks; ask for at most " +
                                         std::to_string(kMaxNeedChunks) + " at a time"));
  }
  std::vector<ChunkId> chunks = ValueOrThrow(ParseChunkIds(p.getChunks()));
  FetchScheduler& fetches = d.fetches;
  return d.scheduler_loop
      .executeAsync([&fetches, target, chunks = std::move(chunks)]() {
        auto known = fetches.VersionChunks(target);
        ThrowIfError(known.status().WithContext(target.ns + "/" + target.name));
        for (const ChunkId& id : chunks) {
          if ((*known)->count(id) == 0) {
            ThrowIfError(Status::InvalidArgument("chunk " + id.ShortHex() + " is not part of " +
                                                 target.ns + "/" + target.name + ":" +
                                                 target.version.ShortHex()));
          }
        }
        return fetches.Need(target, chunks);
      })
      .then([c](NeedReply r) mutable { FillNeedReply(r, c.getResults()); });
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
  std::vector<ChunkId> chunks;
  std::unordered_set<ChunkId> seen;
  for (const FileEntry& f : m.files) {
    for (const ChunkId& chunk : f.ChunkIds()) {
      if (seen.insert(chunk).second) chunks.push_back(chunk);
    }
  }
  kj::Maybe<proto::WarmListener::Client> listener;
  if (p.hasListener()) listener = p.getListener();
  auto box = std::make_shared<WarmListenerBox>(kj::mv(listener));
  return d.scheduler_loop
      .executeAsync([d, target = FetchTarget{ns, name, id}, nodes = std::string(Text(p.getNodes())),
                     chunks = std::move(chunks), post = WarmListenerBox::Post(box)]() {
        return WarmOnSchedulerLoop(d, target, nodes, chunks, post);
      })
      .then([c, box](WarmTotals t) mutable {
        box->Send(t.last);
        auto r = c.getResults();
        r.setOwners(t.owners);
        r.setChunks(t.chunks);
        r.setNodes(t.nodes);
        r.setFetched(t.fetched);
        r.setBytes(t.bytes);
        r.setFailed(t.failed);
        r.setNodesFailed(t.nodes_failed);
      });
}

}  // namespace shoal::tracker
