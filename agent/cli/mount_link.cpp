#include "cli/mount_link.h"

#include <capnp/rpc-twoparty.h>
#include <fcntl.h>
#include <kj/async-io.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "proto/kj_status.h"
#include "shoal/hex.h"
#include "shoal/model_ref.h"
#include "shoal/proto/agent.capnp.h"

namespace shoal {
namespace {

constexpr unsigned kMaxFdsPerMessage = 4;  // the agent sends one per chunk answer

// One connection to the agent, with the version opened on it.
struct Connection {
  explicit Connection(kj::Own<kj::AsyncIoStream> s)
      : stream(kj::mv(s)),
        client(kj::downcast<kj::AsyncCapabilityStream>(*stream), kMaxFdsPerMessage) {}
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyClient client;
  proto::MountedVersion::Client version = nullptr;
  uint64_t generation = 0;
};

struct LeaseData {
  uint64_t id = 0;
  int fd = -1;
  uint64_t offset = 0, length = 0;
};

}  // namespace

struct ChunkLease::Core {
  MountLinkOptions options;

  std::mutex mu;
  kj::Own<const kj::Executor> executor;                 // protected by mu; null until the loop runs
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop;  // protected by mu
  std::thread thread;

  // Loop thread only.
  std::string open_ref;  // the reference as given, then ns/name:<version ID> once opened
  std::string pinned;    // the version ID (hex) once opened; every connection must show it
  kj::AsyncIoProvider* provider = nullptr;
  kj::Maybe<kj::Own<Connection>> conn;
  kj::Maybe<kj::ForkedPromise<void>> connecting;
  std::map<uint64_t, proto::FileHandle::Client> leases;  // what each ChunkLease pins
  uint64_t next_lease = 0, next_generation = 0;
  kj::Maybe<kj::Own<kj::TaskSet>> tasks;

  struct Logger final : kj::TaskSet::ErrorHandler {
    void taskFailed(kj::Exception&&) override {}
  } logger;

  kj::Promise<proto::MountedVersion::Client> Version();
  kj::Promise<kj::Own<Connection>> Connect();
  void Watch(Connection& c);
  void Loop(std::promise<void>* ready);

  // Runs `fn` (a promise for T) on the loop and waits at most
  // call_timeout for it.
  template <typename T, typename Fn>
  Result<T> Call(const std::string& what, Fn fn);
};

void ChunkLease::Core::Loop(std::promise<void>* ready) {
  // Signals belong to FUSE's threads (they end the session), not to this one.
  sigset_t block;
  sigemptyset(&block);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&block, s);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  auto io = kj::setupAsyncIo();
  provider = io.provider.get();
  tasks = kj::heap<kj::TaskSet>(logger);
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  {
    std::lock_guard<std::mutex> l(mu);
    executor = kj::getCurrentThreadExecutor().addRef();
    stop = kj::mv(paf.fulfiller);
  }
  ready->set_value();
  paf.promise.wait(io.waitScope);
  leases.clear();
  connecting = nullptr;
  tasks = nullptr;
  conn = nullptr;
  provider = nullptr;
}

template <typename T, typename Fn>
Result<T> ChunkLease::Core::Call(const std::string& what, Fn fn) {
  kj::Own<const kj::Executor> ex;
  {
    std::lock_guard<std::mutex> l(mu);
    if (executor) ex = executor->addRef();
  }
  if (!ex) return Status::Unavailable(what + ": the mount is stopping");
  Result<T> out = Status::Unavailable(what + ": no answer");
  const auto bound = options.call_timeout;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 ex->executeSync([&]() -> kj::Promise<void> {
                   auto timeout =
                       provider->getTimer().afterDelay(bound.count() * kj::MILLISECONDS).then([&] {
                         out = Status::Unavailable(what + ": the agent did not answer within " +
                                                   std::to_string(bound.count()) +
                                                   " ms (--call-timeout-ms)");
                       });
                   return fn()
                       .then([&](T v) { out = std::move(v); })
                       .exclusiveJoin(kj::mv(timeout));
                 });
               })) {
    Status s = StatusFromException(*e, "the agent at " + options.agent_socket);
    if (e->getType() == kj::Exception::Type::DISCONNECTED ||
        std::string(e->getDescription().cStr()).find("connect") != std::string::npos) {
      s = Status::Unavailable("cannot reach the agent at " + options.agent_socket + " (" +
                              s.message() + "); is shoald running?");
    }
    out = s.WithContext(what);
  }
  return out;
}

kj::Promise<kj::Own<Connection>> ChunkLease::Core::Connect() {
  return provider->getNetwork()
      .parseAddress("unix:" + options.agent_socket)
      .then([](kj::Own<kj::NetworkAddress> addr) { return addr->connect().attach(kj::mv(addr)); })
      .then([this](kj::Own<kj::AsyncIoStream> stream) {
        auto c = kj::heap<Connection>(kj::mv(stream));
        auto req = c->client.bootstrap().castAs<proto::LocalAgent>().mountRequest();
        req.setRef(open_ref);
        req.setToken(options.token);
        return req.send().then([this, c = kj::mv(c)](
                                   capnp::Response<proto::LocalAgent::MountResults> r) mutable {
          const std::string got = hex::Encode(r.getVersionId().begin(), r.getVersionId().size());
          if (!pinned.empty() && got != pinned) {
            ThrowIfError(Status::Corruption("the agent opened version " + got + " for " + open_ref +
                                            "; the mount shows " + pinned));
          }
          c->version = r.getVersion();
          return kj::mv(c);
        });
      });
}

void ChunkLease::Core::Watch(Connection& c) {
  const uint64_t generation = c.generation;
  KJ_IF_MAYBE (t, tasks) {
    (*t)->add(c.client.onDisconnect().then([this, generation] {
      KJ_IF_MAYBE (current, conn) {
        if ((*current)->generation != generation) return;
        // The pins died with the connection; the descriptors leased
        // stay readable. Destroyed on a later turn, not inside its own
        // disconnect callback.
        leases.clear();
        kj::Own<Connection> dead = kj::mv(*current);
        conn = nullptr;
        KJ_IF_MAYBE (t2, tasks) {
          (*t2)->add(kj::evalLater([dead = kj::mv(dead)] {}));
        }
      }
    }));
  }
}

kj::Promise<proto::MountedVersion::Client> ChunkLease::Core::Version() {
  KJ_IF_MAYBE (c, conn) {
    return (*c)->version;
  }
  KJ_IF_MAYBE (f, connecting) {
    return f->addBranch().then([this] { return Version(); });
  }
  auto forked = Connect()
                    .then(
                        [this](kj::Own<Connection> c) {
                          connecting = nullptr;
                          c->generation = ++next_generation;
                          Watch(*c);
                          conn = kj::mv(c);
                        },
                        [this](kj::Exception&& e) {
                          connecting = nullptr;
                          kj::throwFatalException(kj::mv(e));
                        })
                    .fork();
  auto branch = forked.addBranch();
  connecting = kj::mv(forked);
  return branch.then([this] { return Version(); });
}

ChunkLease::~ChunkLease() {
  if (fd_ >= 0) ::close(fd_);
  kj::Own<const kj::Executor> ex;
  {
    std::lock_guard<std::mutex> l(core_->mu);
    if (core_->executor) ex = core_->executor->addRef();
  }
  if (!ex) return;
  Core* core = core_.get();
  const uint64_t id = id_;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions(
                      [&] { ex->executeSync([core, id] { core->leases.erase(id); }); })) {
    (void)e;  // the loop has stopped, and dropped every pin with it
  }
}

Result<std::unique_ptr<MountLink>> MountLink::Open(const MountLinkOptions& options) {
  Result<ModelRef> ref = ModelRef::Parse(options.ref);
  if (!ref.ok()) return ref.status();
  auto core = std::make_shared<ChunkLease::Core>();
  core->options = options;
  core->open_ref = ref->ToString();
  std::promise<void> ready;
  core->thread = std::thread([c = core.get(), &ready] { c->Loop(&ready); });
  ready.get_future().wait();
  std::unique_ptr<MountLink> link(new MountLink(core));
  ChunkLease::Core* c = core.get();
  Result<MountedVersion> opened = core->Call<MountedVersion>("open " + ref->ToString(), [c]() {
    return c->Version()
        .then([](proto::MountedVersion::Client v) { return v.filesRequest().send(); })
        .then([c](capnp::Response<proto::MountedVersion::FilesResults> r) {
          MountedVersion out;
          out.version = hex::Encode(r.getVersionId().begin(), r.getVersionId().size());
          out.created_at_ms = r.getCreatedAtMs();
          out.piece_size = r.getPieceSize();
          for (auto f : r.getFiles()) {
            out.files.push_back(
                MountedFile{f.getPath(), f.getSize(), f.getMode(),
                            hex::Encode(f.getPiecesRoot().begin(), f.getPiecesRoot().size())});
          }
          for (auto d : r.getEmptyDirs()) out.empty_dirs.emplace_back(d);
          return out;
        });
  });
  if (!opened.ok()) return opened.status();
  link->version_ = std::move(opened).value();
  link->version_.ns = ref->ns();
  link->version_.name = ref->name();
  // Reconnections open this very version, whatever the tag says by then.
  const std::string pinned = ref->ns() + "/" + ref->name() + ":" + link->version_.version;
  const std::string id = link->version_.version;
  Status set = core->Call<bool>("pin the version",
                                [c, pinned, id]() {
                                  c->open_ref = pinned;
                                  c->pinned = id;
                                  return kj::Promise<bool>(true);
                                })
                   .status();
  if (!set.ok()) return set;
  return link;
}

MountLink::~MountLink() {
  {
    std::lock_guard<std::mutex> l(core_->mu);
    if (core_->stop) core_->stop->fulfill();
  }
  core_->thread.join();
  std::lock_guard<std::mutex> l(core_->mu);
  core_->executor = nullptr;
}

Result<std::shared_ptr<ChunkLease>> MountLink::Chunk(uint32_t file, uint64_t piece,
                                                     uint64_t last_piece) {
  ChunkLease::Core* c = core_.get();
  const std::string what =
      "read piece " + std::to_string(piece) + " of '" + version_.files[file].path + "'";
  Result<LeaseData> got = c->Call<LeaseData>(what, [c, file, piece, last_piece]() {
    return c->Version()
        .then([file, piece, last_piece](proto::MountedVersion::Client v) {
          auto req = v.chunkRequest();
          req.setFile(file);
          req.setPiece(piece);
          req.setLastPiece(last_piece);
          return req.send();
        })
        .then([c](capnp::Response<proto::MountedVersion::ChunkResults> r) {
          proto::FileHandle::Client handle = r.getHandle();
          const uint64_t offset = r.getOffset(), length = r.getLength();
          return handle.getFd().then(
              [c, handle, offset, length](kj::Maybe<int> fd) mutable -> LeaseData {
                LeaseData out;
                KJ_IF_MAYBE (f, fd) {
                  out.fd = ::fcntl(*f, F_DUPFD_CLOEXEC, 0);
                }
                if (out.fd < 0) {
                  ThrowIfError(Status::IOError("the agent handed over no chunk descriptor"));
                }
                out.id = ++c->next_lease;
                out.offset = offset;
                out.length = length;
                c->leases.emplace(out.id, kj::mv(handle));
                return out;
              });
        });
  });
  if (!got.ok()) return got.status();
  return std::shared_ptr<ChunkLease>(
      new ChunkLease(core_, got->id, got->fd, got->offset, got->length));
}

}  // namespace shoal
