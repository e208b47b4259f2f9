// `shoal publish DIR --name ns/model [--tag T]... [--label k=v]...`
//
// Hashes the folder, asks the tracker which chunks the origin lacks, uploads
// those in parallel, then commits the manifest. The version becomes visible
// only at the commit, once every chunk is in the origin; a publish that dies
// before it leaves nothing visible, and running it again skips what arrived.
#include <capnp/rpc-twoparty.h>
#include <fcntl.h>
#include <kj/async-io.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "cli/chunk_uploader.h"
#include "cli/client_flags.h"
#include "cli/commands.h"
#include "cli/file_handle_server.h"
#include "cli/progress_bar.h"
#include "kj_status.h"
#include "shoal/manifest_builder.h"
#include "shoal/manifest_codec.h"
#include "shoal/model_ref.h"
#include "shoal/proto/agent.capnp.h"
#include "shoal/sha256.h"

namespace shoal {
namespace {

struct PublishArgs {
  std::string dir;
  std::string name;
  std::vector<std::string> tags;
  std::vector<std::string> labels;
  std::string parent;  // version id; empty = what `latest` points at
  uint32_t piece_size = kDefaultPieceSize;
  int parallelism = 8;
  bool follow_symlinks = false;
  ClientFlags client;
  OriginOptions origin;
  std::string agent_socket = "/run/shoald/shoald.sock";
  bool no_seed = false;
  bool no_hash_cache = false;
};

// Opens the published files for the agent, as the user who publishes: the
// agent reads nothing this user could not.
class SeedSourceServer final : public proto::SeedSource::Server {
 public:
  explicit SeedSourceServer(std::string dir) : dir_(std::move(dir)) {}

 protected:
  kj::Promise<void> openFile(OpenFileContext c) override {
    std::string rel = c.getParams().getPath();
    if (rel.empty() || rel.front() == '/' || ("/" + rel + "/").find("/../") != std::string::npos) {
      ThrowIfError(Status::InvalidArgument("the agent asked for an unsafe path '" + rel + "'"));
    }
    std::string path = dir_ + "/" + rel;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) ThrowIfError(Status::FromErrno("open " + path, errno));
    c.getResults().setFile(kj::heap<FileHandleServer>(fd));
    return kj::READY_NOW;
  }

 private:
  const std::string dir_;
};

// Asks this node's agent to seed the published files, so peers read them
// from here rather than from the origin.
Status SeedThroughAgent(const std::string& socket, const std::string& ref, const std::string& token,
                        const std::string& dir, uint64_t* chunks) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(dir, ec).lexically_normal().string();
  auto io = kj::setupAsyncIo();
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 auto addr =
                     io.provider->getNetwork().parseAddress("unix:" + socket).wait(io.waitScope);
                 auto stream = addr->connect().wait(io.waitScope);
                 capnp::TwoPartyClient client(kj::downcast<kj::AsyncCapabilityStream>(*stream),
                                              /*maxFdsPerMessage=*/2);
                 auto req = client.bootstrap().castAs<proto::LocalAgent>().seedRequest();
                 req.setRef(ref);
                 req.setToken(token);
                 req.setDir(abs);
                 req.setSource(kj::heap<SeedSourceServer>(abs));
                 *chunks = req.send().wait(io.waitScope).getChunks();
               })) {
    return StatusFromException(*e, "agent at " + socket);
  }
  return Status::OK();
}

// Reports uploaded chunks to the tracker in batches, from this thread, while
// workers upload.
class StoredReporter {
 public:
  void Add(const ChunkId& id) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(id);
    cv_.notify_one();
  }
  std::vector<ChunkId> Take(std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [this] { return pending_.size() >= 256; });
    return std::exchange(pending_, {});
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ChunkId> pending_;  // protected by mu_
};

Status CheckPublishArgs(const PublishArgs& a) {
  struct stat st;
  if (::stat(a.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("'" + a.dir +
                                   "' is not a folder; give the checkpoint folder to publish");
  }
  if (a.origin.url.empty()) {
    return Status::InvalidArgument(
        "no origin; pass --origin file:///path or s3://bucket, or set SHOAL_ORIGIN");
  }
  return Status::OK();
}

// Hashes the folder into a manifest of `ref`, reusing the hashes of files
// unchanged since the last publish unless --no-hash-cache.
Result<Manifest> HashFolder(const PublishArgs& a, const ModelRef& ref,
                            const std::string& created_by) {
  BuildOptions opts;
  opts.hash.piece_size = a.piece_size;
  opts.follow_symlinks = a.follow_symlinks;
  opts.ns = ref.ns();
  opts.name = ref.name();
  opts.created_by = created_by;
  std::unique_ptr<HashCache> cache;
  if (!a.no_hash_cache) {
    auto opened = HashCache::Open(HashCache::DefaultDir());
    if (opened.ok()) {
      cache = std::move(opened).value();
      opts.hash_cache = cache.get();
    } else {
      std::fprintf(stderr, "shoal: warning: %s; hashing every file\n",
                   opened.status().ToString().c_str());
    }
  }
  ProgressBar bar("hashing  ", 0);
  return BuildManifest(a.dir, opts,
                       [&](uint64_t done, uint64_t total) { bar.Update(done, total); });
}

// Adds the --label pairs and the parent: --parent, else what `latest` points at.
Status AddLabelsAndParent(const PublishArgs& a, TrackerClient& t, Manifest& m) {
  for (const std::string& kv : a.labels) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos)
      return Status::InvalidArgument("--label '" + kv + "' must be key=value");
    m.labels.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
  }
  if (!a.parent.empty()) {
    auto parent = t.Resolve(m.ns, m.name, a.parent);
    if (!parent.ok()) return parent.status().WithContext("--parent");
    m.parent = parent->id;
  } else if (auto latest = t.Resolve(m.ns, m.name, "latest"); latest.ok()) {
    m.parent = latest->id;
  }
  return Status::OK();
}

// One round of uploads: `ids` go to the origin on worker threads while this
// thread reports each stored batch to the tracker.
Status UploadRound(TrackerClient& t, Origin& origin, const std::string& ns,
                   const std::vector<ChunkId>& ids,
                   const std::unordered_map<ChunkId, ChunkSource>& sources, int parallelism,
                   UploadStats* stats, const std::function<void()>& progress) {
  StoredReporter reporter;
  Status upload_status;
  std::thread uploader([&] {
    upload_status = UploadChunks(origin, ids, sources, parallelism, stats,
                                 [&](const ChunkId& id) { reporter.Add(id); });
    reporter.Add(ChunkId());  // wake the reporter
  });
  size_t reported = 0;
  Status report_status;
  while (reported < ids.size() && report_status.ok()) {
    std::vector<ChunkId> batch = reporter.Take(std::chrono::milliseconds(300));
    bool finished = false;
    std::vector<ChunkId> real;
    for (const ChunkId& id : batch) {
      if (id.IsZero())
        finished = true;
      else
        real.push_back(id);
    }
    if (!real.empty()) {
      report_status = t.ChunksStored(ns, real);
      reported += real.size();
    }
    progress();
    if (finished) break;
  }
  uploader.join();
  if (!upload_status.ok()) return upload_status.WithContext("upload to " + origin.Describe());
  return report_status;
}

// Names this publish for its upload leases: the same folder published
// under the same name from the same host is the same publish, so a run cut
// off (a dead tracker, Ctrl-C) and started again takes its leases over.
std::string UploadIdOf(const PublishArgs& a) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::weakly_canonical(a.dir, ec);
  const std::string key = std::string(host) + "\n" + (ec ? a.dir : dir.string()) + "\n" + a.name;
  return Sha256::Of(key.data(), key.size()).ToHex().substr(0, 32);
}

// Uploads every chunk of `all` the tracker says the origin lacks, round
// after round, until none is missing or being uploaded by another publish.
Status UploadMissing(const PublishArgs& a, TrackerClient& t, Origin& origin, const Manifest& m,
                     std::unordered_map<ChunkId, ChunkSource>& sources,
                     const std::vector<ChunkId>& all, UploadStats* stats) {
  ProgressBar bar("uploading", 0);
  uint64_t planned_bytes = 0;
  const std::string upload_id = UploadIdOf(a);
  for (int round = 0;; ++round) {
    auto plan = t.PlanUpload(m.ns, all, upload_id);
    if (!plan.ok()) return plan.status();
    if (plan->upload.empty() && plan->wait.empty()) break;
    for (const ChunkId& id : plan->upload) planned_bytes += sources[id].length;
    if (plan->upload.empty()) {
      // Another publish is uploading the rest; wait for it, or for its lease to lapse.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    SHOAL_RETURN_IF_ERROR(UploadRound(t, origin, m.ns, plan->upload, sources, a.parallelism, stats,
                                      [&] { bar.Update(stats->done_bytes, planned_bytes); }));
  }
  bar.Finish();
  return Status::OK();
}

void PrintPublished(const PublishArgs& a, const Manifest& m, const SignedVersion& committed,
                    const UploadStats& stats, size_t unique_chunks) {
  std::string tags;
  for (const std::string& tag : a.tags) tags += " " + tag;
  std::printf("published %s/%s:%s%s\n", m.ns.c_str(), m.name.c_str(), committed.id.ToHex().c_str(),
              committed.created ? "" : " (already existed)");
  std::printf(
      "  %zu files, %s; uploaded %llu chunks (%s), %llu already in the origin, %zu unique chunks\n",
      m.files.size(), FormatBytes(m.TotalBytes()).c_str(),
      static_cast<unsigned long long>(stats.uploaded_chunks.load()),
      FormatBytes(stats.uploaded_bytes).c_str(),
      static_cast<unsigned long long>(unique_chunks - stats.uploaded_chunks.load()), unique_chunks);
  if (!tags.empty()) std::printf("  tags:%s\n", tags.c_str());
}

// Hands the published files to this node's agent to seed, if one listens.
void SeedIfAgent(const PublishArgs& a, const std::string& ref) {
  struct stat sock;
  if (::stat(a.agent_socket.c_str(), &sock) != 0) {
    std::printf("  not seeding: no agent at %s (pass --agent, or --no-seed)\n",
                a.agent_socket.c_str());
    return;
  }
  uint64_t seeded = 0;
  Status s = SeedThroughAgent(a.agent_socket, ref, a.client.token, a.dir, &seeded);
  if (s.ok()) {
    std::printf("  seeding from this node's agent (%llu chunks cached)\n",
                static_cast<unsigned long long>(seeded));
  } else {
    std::printf("  not seeding: %s\n", s.ToString().c_str());
  }
}

Status RunPublish(PublishArgs& a) {
  Result<ModelRef> ref = ModelRef::Parse(a.name);
  if (!ref.ok()) return ref.status().WithContext("--name");
  SHOAL_RETURN_IF_ERROR(CheckPublishArgs(a));
  auto tracker = ConnectTracker(a.client);
  if (!tracker.ok()) return tracker.status();
  TrackerClient& t = **tracker;
  auto origin = OpenOrigin(a.origin);
  if (!origin.ok()) return origin.status().WithContext("open origin " + a.origin.url);

  Result<Manifest> built = HashFolder(a, *ref, t.identity().subject);
  if (!built.ok()) return built.status();
  Manifest& m = *built;
  SHOAL_RETURN_IF_ERROR(AddLabelsAndParent(a, t, m));
  Result<std::string> bytes = EncodeManifest(m);
  if (!bytes.ok()) return bytes.status();

  auto sources = LocateChunks(m, a.dir);
  std::vector<ChunkId> all;
  all.reserve(sources.size());
  for (const auto& [id, src] : sources) all.push_back(id);
  UploadStats stats;
  SHOAL_RETURN_IF_ERROR(UploadMissing(a, t, **origin, m, sources, all, &stats));

  auto committed = t.Commit(*bytes, a.tags);
  if (!committed.ok()) return committed.status();
  PrintPublished(a, m, *committed, stats, all.size());
  if (!a.no_seed) {
    tracker->reset();  // one kj event loop per thread: close the tracker's first
    SeedIfAgent(a, m.ns + "/" + m.name + ":" + committed->id.ToHex());
  }
  OriginCounters oc = (*origin)->counters();
  std::printf("  origin: %llu PUT requests, %llu bytes sent; %llu HEAD requests\n",
              static_cast<unsigned long long>(oc.put.requests),
              static_cast<unsigned long long>(oc.put.bytes),
              static_cast<unsigned long long>(oc.head.requests));
  return Status::OK();
}

}  // namespace

void RegisterPublish(CLI::App& app, CommandRunner* run) {
  auto a = std::make_shared<PublishArgs>();
  CLI::App* cmd =
      app.add_subcommand("publish", "upload a checkpoint folder as a new immutable version");
  cmd->add_option("dir", a->dir, "checkpoint folder")->required();
  cmd->add_option("--name", a->name, "namespace/model")->required();
  cmd->add_option("--tag", a->tags, "tag to point at the new version; repeatable");
  cmd->add_option("--label", a->labels, "key=value label; repeatable");
  cmd->add_option("--parent", a->parent, "parent version or tag (default: the current latest)");
  cmd->add_option("--piece-size", a->piece_size, "bytes per chunk, a power of two")
      ->capture_default_str();
  cmd->add_option("--parallel", a->parallelism, "chunk uploads in flight")->capture_default_str();
  cmd->add_flag("--follow-symlinks", a->follow_symlinks, "publish the targets of symbolic links");
  cmd->add_option("--agent", a->agent_socket,
                  "this node's agent socket; it seeds what was published")
      ->envname("SHOAL_AGENT_SOCKET")
      ->capture_default_str();
  cmd->add_flag("--no-seed", a->no_seed, "do not hand the files to the local agent");
  cmd->add_flag("--no-hash-cache", a->no_hash_cache,
                "hash every file even if it is unchanged since the last publish");
  AddClientFlags(cmd, &a->client);
  AddOriginFlags(cmd, &a->origin);
  cmd->callback([a, run] { *run = [a] { return RunPublish(*a); }; });
}

}  // namespace shoal
