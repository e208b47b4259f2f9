#include "daemon/local_control.h"

#include <capnp/rpc-twoparty.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "kj_status.h"
#include "daemon/job_threads.h"
#include "shoal/log.h"
#include "shoal/proto/agent.capnp.h"

namespace shoal {
namespace {

// Touched only on the event loop's thread.
struct ListenerSlot {
  kj::Maybe<proto::PullListener::Client> client;
};

class LocalAgentImpl final : public proto::LocalAgent::Server {
 public:
  LocalAgentImpl(LocalControlDeps& deps, JobThreads& threads) : deps_(deps), threads_(threads) {}

 protected:
  kj::Promise<void> pull(PullContext c) override {
    auto p = c.getParams();
    std::string ref = p.getRef(), token = p.getToken(), dest = p.getDest();
    auto listener = p.getListener();
    if (!deps_.link.registered()) {
      ThrowIfError(Status::Unavailable("this agent is not registered with its tracker yet; check --tracker and --token"));
    }
    const kj::Executor& executor = kj::getCurrentThreadExecutor();
    // The listener capability lives and dies on this event loop's thread: the
    // job reaches it only through executeSync, and finds it gone once the
    // caller hangs up or the call ends.
    auto slot = std::make_shared<ListenerSlot>();
    slot->client = kj::mv(listener);
    shoal::PullContext job = deps_.pulls;
    job.announce_url = deps_.link.announce_url();
    job.self_id = deps_.link.agent_id();
    TrackerLink* link = &deps_.link;
    job.ring = [link] { return link->ring(); };
    auto done = threads_.Run<Result<PullResult>>([job, ref, token, dest, &executor, slot]() mutable {
      auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
      auto progress = [&](const PullState& s) {
        auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::milliseconds(200)) return;
        last = now;
        executor.executeSync([&] {
          proto::PullListener::Client* client = nullptr;
          KJ_IF_MAYBE(c, slot->client) { client = c; }
          if (client == nullptr) return;
          auto req = client->progressRequest();
          auto st = req.initState();
          st.setTotalBytes(s.total_bytes);
          st.setHaveBytes(s.have_bytes);
          st.setBytesFromPeers(s.bytes_from_peers);
          st.setBytesFromOrigin(s.bytes_from_origin);
          st.setPeers(s.peers);
          st.setFilesDone(s.files_done);
          st.setFilesTotal(s.files_total);
          req.send().detach([](kj::Exception&&) {});
        });
      };
      Result<PullResult> r = RunPull(job, ref, token, dest, progress);
      if (!r.ok()) {
        job.counters.pull_failures++;
        Log(LogLevel::kWarn, "pull.failed", {{"ref", ref}, {"error", r.status().ToString()}});
      }
      return r;
    });
    auto forget = kj::defer([slot] { slot->client = nullptr; });
    return done.attach(kj::mv(forget)).then([c](Result<PullResult> r) mutable {
      ThrowIfError(r.status());
      auto out = c.getResults().initSummary();
      out.setVersionId(kj::arrayPtr(r->version.data(), VersionId::kSize));
      out.setTotalBytes(r->total_bytes);
      out.setBytesFromPeers(r->bytes_from_peers);
      out.setBytesFromOrigin(r->bytes_from_origin);
      out.setBytesCached(r->bytes_cached);
      out.setSeconds(r->seconds);
      out.setFirstChunkSeconds(r->first_chunk_seconds);
      out.setFileCount(r->file_count);
    });
  }

  kj::Promise<void> seed(SeedContext c) override {
    auto p = c.getParams();
    std::string ref = p.getRef(), token = p.getToken(), dir = p.getDir();
    if (!deps_.link.registered()) {
      ThrowIfError(Status::Unavailable("this agent is not registered with its tracker yet; check --tracker and --token"));
    }
    shoal::PullContext job = deps_.pulls;
    job.announce_url = deps_.link.announce_url();
    return threads_.Run<Result<SeedResult>>([job, ref, token, dir]() mutable { return RunSeed(job, ref, token, dir); })
        .then([c](Result<SeedResult> r) mutable {
      ThrowIfError(r.status());
      c.getResults().setChunks(r->chunks);
      c.getResults().setBytes(r->bytes);
    });
  }

  kj::Promise<void> status(StatusContext c) override {
    FillAgentStats(deps_.stats(), c.getResults().initStats());
    c.getResults().setAgentId(deps_.link.agent_id());
    c.getResults().setEpoch(deps_.link.epoch());
    return kj::READY_NOW;
  }

 private:
  LocalControlDeps& deps_;
  JobThreads& threads_;
};

struct State {
  explicit State(LocalControlDeps d) : deps(std::move(d)) {}
  LocalControlDeps deps;
  JobThreads threads;  // destroyed before deps: joins pulls that use them
};

}  // namespace

kj::Promise<void> ServeLocalControl(kj::AsyncIoContext& io, const std::string& socket_path,
                                    LocalControlDeps deps) {
  // A service manager usually provides the socket's folder (systemd's
  // RuntimeDirectory=shoald, a hostPath in Kubernetes); make it otherwise.
  // A failure here shows up as the listen error below.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(socket_path).parent_path(), ec);
  ::unlink(socket_path.c_str());
  auto addr = io.provider->getNetwork().parseAddress("unix:" + socket_path).wait(io.waitScope);
  auto listener = addr->listen();
  ::chmod(socket_path.c_str(), 0666);  // any local user may ask; the token decides what they get
  auto state = kj::heap<State>(kj::mv(deps));
  auto server = kj::heap<capnp::TwoPartyServer>(kj::heap<LocalAgentImpl>(state->deps, state->threads));
  auto done = server->listen(*listener);
  return done.attach(kj::mv(server), kj::mv(listener), kj::mv(state));
}

}  // namespace shoal
