#include "daemon/local_control.h"

#include <capnp/rpc-twoparty.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>

#include "daemon/caller_files.h"
#include "daemon/control_socket.h"
#include "daemon/mount_version.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "proto/task_error_log.h"
#include "read/read_service.h"
#include "shoal/log.h"
#include "shoal/model_ref.h"
#include "shoal/proto/agent.capnp.h"

namespace shoal {
namespace {

// A caller hands over at most a batch of destination files per message.
constexpr unsigned kMaxFdsPerMessage = PullDestination::kMaxOpenBatch + 2;

// One call's link to its caller. `client` is touched only on the event
// loop's thread; `cancelled` is set there when the caller hangs up or the
// call ends, and read by the job's thread.
struct CallSlot {
  kj::Maybe<proto::PullListener::Client> listener;
  kj::Maybe<proto::SeedSource::Client> source;
  std::atomic<bool> cancelled{false};
};

// Runs `fn` (which returns a promise) on the event loop's thread and waits
// for it. Any failure, the caller's going away included, comes back as a
// Status naming `what`.
template <typename Fn>
Status OnLoop(const kj::Executor& executor, const std::string& what, Fn&& fn) {
  Status result;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] { executor.executeSync(kj::fwd<Fn>(fn)); })) {
    result = StatusFromException(*e, "the caller").WithContext(what);
  }
  return result;
}

// Takes the descriptor a FileHandle carries; -1 if it carries none.
kj::Promise<int> TakeFd(proto::FileHandle::Client file) {
  auto fd = file.getFd();
  return fd.then([file](kj::Maybe<int> got) mutable -> int {
    KJ_IF_MAYBE (f, got) {
      return ::fcntl(*f, F_DUPFD_CLOEXEC, 0);
    }
    return -1;
  });
}

Status CallerGone() { return Status::Unavailable("the caller went away"); }

// A failed model lookup, as the CLI shows it.
Status StatusOfLookup(const ReadError& e) {
  switch (e.failure) {
    case ReadFailure::kNoCredentials:
    case ReadFailure::kBadToken:
      return Status::Unauthenticated(e.message);
    case ReadFailure::kAccessDenied:
      return Status::PermissionDenied(e.message);
    case ReadFailure::kNoSuchKey:
    case ReadFailure::kNoSuchBucket:
      return Status::NotFound(e.message);
    case ReadFailure::kUnavailable:
    case ReadFailure::kSlowDown:
      return Status::Unavailable(e.message);
    default:
      return Status::InvalidArgument(e.message);
  }
}

// The caller's staging folder, reached through its PullListener.
class ListenerDestination final : public PullDestination {
 public:
  ListenerDestination(const kj::Executor& executor, std::shared_ptr<CallSlot> slot)
      : executor_(executor), slot_(std::move(slot)) {}

  Status Prepare(const std::vector<std::string>& dirs,
                 const std::vector<DestFileSpec>& files) override {
    return OnLoop(executor_, "lay out the destination", [&]() -> kj::Promise<void> {
      KJ_IF_MAYBE (l, slot_->listener) {
        auto req = l->prepareRequest();
        auto d = req.initDirs(static_cast<unsigned>(dirs.size()));
        for (size_t i = 0; i < dirs.size(); ++i) d.set(static_cast<unsigned>(i), dirs[i]);
        auto f = req.initFiles(static_cast<unsigned>(files.size()));
        for (size_t i = 0; i < files.size(); ++i) {
          f[static_cast<unsigned>(i)].setPath(files[i].path);
          f[static_cast<unsigned>(i)].setSize(files[i].size);
          f[static_cast<unsigned>(i)].setMode(files[i].mode);
        }
        return req.send().ignoreResult();
      }
      return ThrowStatus(CallerGone());
    });
  }

  Result<std::vector<int>> OpenFiles(const std::vector<uint32_t>& indexes) override {
    std::vector<int> fds;
    Status s = OnLoop(executor_, "open destination files", [&]() -> kj::Promise<void> {
      KJ_IF_MAYBE (l, slot_->listener) {
        auto req = l->openFilesRequest();
        auto list = req.initIndexes(static_cast<unsigned>(indexes.size()));
        for (size_t i = 0; i < indexes.size(); ++i) list.set(static_cast<unsigned>(i), indexes[i]);
        return req.send().then([&fds](auto resp) {
          auto files = resp.getFiles();
          kj::Vector<kj::Promise<void>> taken;
          fds.assign(files.size(), -1);
          for (unsigned i = 0; i < files.size(); ++i) {
            taken.add(TakeFd(files[i]).then([&fds, i](int got) { fds[i] = got; }));
          }
          return kj::joinPromises(taken.releaseAsArray());
        });
      }
      return ThrowStatus(CallerGone());
    });
    auto close_all = [&fds] {
      for (int fd : fds) {
        if (fd >= 0) ::close(fd);
      }
    };
    if (!s.ok()) {
      close_all();
      return s;
    }
    if (fds.size() != indexes.size()) {
      close_all();
      return Status::PermissionDenied("the caller handed over " + std::to_string(fds.size()) +
                                      " files for " + std::to_string(indexes.size()));
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      Result<int> checked =
          fds[i] < 0
              ? Result<int>(Status::PermissionDenied("the caller handed over no file descriptor"))
              : CheckReceivedFile(fds[i], /*for_write=*/true, "a destination file");
      if (!checked.ok()) {
        fds[i] = -1;  // closed by the check
        close_all();
        return checked.status();
      }
    }
    return fds;
  }

  Status WriteFiles(const std::vector<WholeFile>& files) override {
    return OnLoop(executor_, "write destination files", [&]() -> kj::Promise<void> {
      KJ_IF_MAYBE (l, slot_->listener) {
        auto req = l->writeFilesRequest();
        auto list = req.initFiles(static_cast<unsigned>(files.size()));
        for (size_t i = 0; i < files.size(); ++i) {
          list[static_cast<unsigned>(i)].setIndex(files[i].index);
          list[static_cast<unsigned>(i)].setData(capnp::Data::Reader(
              reinterpret_cast<const capnp::byte*>(files[i].data.data()), files[i].data.size()));
        }
        return req.send().ignoreResult();
      }
      return ThrowStatus(CallerGone());
    });
  }

 private:
  static kj::Promise<void> ThrowStatus(const Status& s) {
    ThrowIfError(s);
    return kj::READY_NOW;
  }
  const kj::Executor& executor_;
  std::shared_ptr<CallSlot> slot_;
};

// The folder being seeded, reached through the caller's SeedSource.
class SourceFiles final : public SeedFiles {
 public:
  SourceFiles(const kj::Executor& executor, std::shared_ptr<CallSlot> slot)
      : executor_(executor), slot_(std::move(slot)) {}

  Result<int> OpenFile(const std::string& path) override {
    int fd = -1;
    Status s = OnLoop(executor_, "open " + path, [&]() -> kj::Promise<void> {
      KJ_IF_MAYBE (src, slot_->source) {
        auto req = src->openFileRequest();
        req.setPath(path);
        return req.send()
            .then([](auto resp) { return TakeFd(resp.getFile()); })
            .then([&fd](int got) { fd = got; });
      }
      ThrowIfError(CallerGone());
      return kj::READY_NOW;
    });
    if (!s.ok()) return s;
    if (fd < 0)
      return Status::PermissionDenied("the caller handed over no file descriptor for " + path);
    return CheckReceivedFile(fd, /*for_write=*/false, path);
  }

 private:
  const kj::Executor& executor_;
  std::shared_ptr<CallSlot> slot_;
};

// Relays a pull's progress to its caller's listener, at most every 200 ms.
// Lives on the job's thread.
class ProgressRelay {
 public:
  ProgressRelay(const kj::Executor& executor, std::shared_ptr<CallSlot> slot)
      : executor_(executor), slot_(std::move(slot)) {}

  void Send(const PullState& s) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200) || slot_->cancelled.load()) return;
    last_ = now;
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                   executor_.executeSync([&] {
                     KJ_IF_MAYBE (client, slot_->listener) {
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
                     }
                   });
                 })) {
      (void)e;  // the loop is gone: the agent is stopping, and the job sees it next
    }
  }

 private:
  const kj::Executor& executor_;
  std::shared_ptr<CallSlot> slot_;
  std::chrono::steady_clock::time_point last_ =
      std::chrono::steady_clock::now() - std::chrono::seconds(1);
};

void FillSummary(const PullResult& r, proto::PullSummary::Builder out) {
  out.setVersionId(kj::arrayPtr(r.version.data(), VersionId::kSize));
  out.setTotalBytes(r.total_bytes);
  out.setBytesFromPeers(r.bytes_from_peers);
  out.setBytesFromOrigin(r.bytes_from_origin);
  out.setBytesCached(r.bytes_cached);
  out.setSeconds(r.seconds);
  out.setFirstChunkSeconds(r.first_chunk_seconds);
  out.setFileCount(r.file_count);
}

class LocalAgentImpl final : public proto::LocalAgent::Server {
 public:
  LocalAgentImpl(LocalControlDeps& deps, PeerCred peer) : deps_(deps), peer_(peer) {}

 protected:
  kj::Promise<void> pull(PullContext c) override {
    // A caller that hangs up drops this call's promise, whose deferred
    // `forget` then cancels the job.
    c.allowCancellation();
    auto p = c.getParams();
    std::string ref = p.getRef(), token = p.getToken(), dest = p.getDest();
    std::vector<std::string> labels;
    for (auto l : p.getLabels()) labels.emplace_back(l);
    if (!deps_.link.registered()) {
      ThrowIfError(Status::Unavailable(
          "this agent is not registered with its tracker yet; check --tracker and --token"));
    }
    const kj::Executor& executor = kj::getCurrentThreadExecutor();
    // The listener capability lives and dies on this event loop's thread: the
    // job reaches it only through executeSync, and finds it gone once the
    // caller hangs up or the call ends, which also cancels the job.
    auto slot = std::make_shared<CallSlot>();
    slot->listener = p.getListener();
    shoal::PullContext job = deps_.pulls;
    job.announce_url = deps_.link.announce_url();
    job.self_id = deps_.link.agent_id();
    TrackerFleet* link = &deps_.link;
    job.ring = [link] { return link->ring(); };
    Log(LogLevel::kInfo, "pull.start",
        {{"ref", ref}, {"dest", dest}, {"peer_uid", peer_.uid}, {"peer_pid", peer_.pid}});
    auto done = deps_.threads.Run<Result<PullResult>>(
        [job, ref, token, dest, labels, &executor, slot]() mutable {
          ProgressRelay relay(executor, slot);
          ListenerDestination destination(executor, slot);
          PullRequest request;
          request.ref = ref;
          request.labels = labels;
          request.token = token;
          request.dest = &destination;
          request.dest_label = dest;
          request.cancelled = &slot->cancelled;
          Result<PullResult> r = RunPull(job, request, [&](const PullState& s) { relay.Send(s); });
          if (!r.ok()) {
            job.counters.pull_failures++;
            Log(LogLevel::kWarn, "pull.failed",
                {{"ref", ref}, {"dest", dest}, {"error", r.status().ToString()}});
          }
          return r;
        });
    auto forget = kj::defer([slot] {
      slot->cancelled = true;
      slot->listener = nullptr;
    });
    return done.attach(kj::mv(forget)).then([c](Result<PullResult> r) mutable {
      ThrowIfError(r.status());
      FillSummary(*r, c.getResults().initSummary());
    });
  }

  kj::Promise<void> seed(SeedContext c) override {
    c.allowCancellation();
    auto p = c.getParams();
    std::string ref = p.getRef(), token = p.getToken(), dir = p.getDir();
    if (!deps_.link.registered()) {
      ThrowIfError(Status::Unavailable(
          "this agent is not registered with its tracker yet; check --tracker and --token"));
    }
    const kj::Executor& executor = kj::getCurrentThreadExecutor();
    auto slot = std::make_shared<CallSlot>();
    slot->source = p.getSource();
    shoal::PullContext job = deps_.pulls;
    job.announce_url = deps_.link.announce_url();
    auto done =
        deps_.threads.Run<Result<SeedResult>>([job, ref, token, dir, &executor, slot]() mutable {
          SourceFiles files(executor, slot);
          return RunSeed(job, ref, token, files, dir);
        });
    auto forget = kj::defer([slot] {
      slot->cancelled = true;
      slot->source = nullptr;
    });
    return done.attach(kj::mv(forget)).then([c](Result<SeedResult> r) mutable {
      ThrowIfError(r.status());
      c.getResults().setChunks(r->chunks);
      c.getResults().setBytes(r->bytes);
    });
  }

  kj::Promise<void> mount(MountContext c) override {
    c.allowCancellation();
    auto p = c.getParams();
    std::string token = p.getToken();
    if (!deps_.link.registered()) {
      ThrowIfError(Status::Unavailable(
          "this agent is not registered with its tracker yet; check --tracker and --token"));
    }
    ModelRef ref = ValueOrThrow(ModelRef::Parse(std::string(p.getRef())));
    ModelResolver& resolver = deps_.reads.resolver();
    auto resolved = deps_.threads.Run<Resolution>([&resolver, ref, token] {
      return resolver.Resolve(token, ref.ns(), ref.name(), ref.ref());
    });
    return resolved.then([this, c, ref, token](Resolution r) mutable {
      if (!r.model) ThrowIfError(StatusOfLookup(r.error).WithContext("mount " + ref.ToString()));
      Log(LogLevel::kInfo, "mount.open",
          {{"ref", ref.ToString()},
           {"version", r.model->version.ToHex()},
           {"peer_uid", peer_.uid},
           {"peer_pid", peer_.pid}});
      auto out = c.getResults();
      out.setVersionId(kj::arrayPtr(r.model->version.data(), VersionId::kSize));
      out.setVersion(kj::heap<MountedVersionImpl>(r.model, token, deps_.revocations,
                                                  deps_.reads.fetcher(), deps_.pulls.store));
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
  const PeerCred peer_;
};

// One caller's connection, with file descriptor passing on.
struct Connection {
  Connection(kj::Own<kj::AsyncIoStream> s, LocalControlDeps& deps)
      : stream(kj::mv(s)),
        network(kj::downcast<kj::AsyncCapabilityStream>(*stream), kMaxFdsPerMessage,
                capnp::rpc::twoparty::Side::SERVER),
        rpc(capnp::makeRpcServer(network, kj::heap<LocalAgentImpl>(deps, PeerOf(*stream)))) {}
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

struct State {
  explicit State(LocalControlDeps d) : deps(std::move(d)) {}
  LocalControlDeps deps;
  TaskErrorLog logger{LogLevel::kDebug, "control.connection_error"};
  kj::TaskSet connections{logger};
};

kj::Promise<void> AcceptLoop(kj::ConnectionReceiver& listener, State& state) {
  return listener.accept().then([&](kj::Own<kj::AsyncIoStream>&& stream) {
    auto conn = kj::heap<Connection>(kj::mv(stream), state.deps);
    auto done = conn->network.onDisconnect();
    state.connections.add(done.attach(kj::mv(conn)));
    return AcceptLoop(listener, state);
  });
}

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
  ThrowIfError(SetSocketAccess(socket_path, deps.pulls.options.control_socket_mode,
                               deps.pulls.options.control_socket_group));
  auto state = kj::heap<State>(kj::mv(deps));
  auto loop = AcceptLoop(*listener, *state);
  return loop.attach(kj::mv(state), kj::mv(listener));
}

}  // namespace shoal
