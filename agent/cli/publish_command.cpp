// `shoal publish DIR --name ns/model [--tag T]... [--label k=v]...`
//
// Reads the folder once: each piece is hashed and, if the tracker says the
// origin lacks it, uploaded from the same buffer while the rest of the
// folder is hashed. What could not be kept in memory is read again later.
//
// With this node's agent seeding (the default when one listens), the
// version is committed as soon as the folder is hashed, in state
// `uploading`: other nodes pull it from this node's agent while the upload
// goes on, and the tags wait until every chunk is in the origin (durable)
// unless --tag-early. If this process dies first, the tracker marks the
// version failed once its lease lapses. Without an agent, the version is
// committed only once every chunk is in the origin, as one step. Either
// way, running the publish again skips what arrived.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli/chunk_uploader.h"
#include "cli/client_flags.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "cli/publish_seed.h"
#include "cli/publish_uploads.h"
#include "cli/version_json.h"
#include "shoal/byte_size.h"
#include "shoal/manifest_builder.h"
#include "shoal/manifest_codec.h"
#include "shoal/model_ref.h"
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
  bool json = false;  // one JSON document on stdout, nothing else
  bool no_hash_cache = false;
  bool tag_early = false;
  std::string memory = "256MiB";  // hashed chunks kept for upload
};

// Hashing threads, each holding one piece: more than this outruns any disk.
constexpr unsigned kMaxHashThreads = 16;

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
                            const std::string& created_by, const PieceSink& sink) {
  BuildOptions opts;
  opts.hash.piece_size = a.piece_size;
  opts.hash.threads =
      static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, kMaxHashThreads));
  opts.hash.on_piece = sink;
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

// Hashes the folder on another thread while this one plans and reports the
// uploads of the pieces hashed so far.
Result<Manifest> HashWhileUploading(const PublishArgs& a, const ModelRef& ref,
                                    const std::string& created_by, ChunkUploader& up,
                                    PublishUploads& uploads) {
  std::atomic<bool> hashed{false};
  std::optional<Result<Manifest>> built;
  std::thread hasher([&] {
    built = HashFolder(a, ref, created_by, [&up](HashedPiece& p) { up.Offer(p); });
    hashed = true;
  });
  Status s;
  // Step wakes as pieces are offered or stored; the short tick notices the
  // end of hashing (all from the hash cache, say) without delay.
  while (!hashed && s.ok()) s = uploads.Step(std::chrono::milliseconds(20));
  // The tracker failing the plan leaves pieces unplanned: a hasher waiting
  // for their room must not wait for ever.
  if (!s.ok()) up.Abort(s);
  hasher.join();
  if (!built->ok()) return built->status();
  if (!s.ok()) return s.WithContext("upload to " + ref.ToString());
  return std::move(*built);
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
  std::printf("  read again for upload: %s\n", FormatBytes(stats.reread_bytes).c_str());
  if (!tags.empty()) std::printf("  tags:%s\n", tags.c_str());
}

void PrintSeeding(const Status& s, uint64_t chunks) {
  if (s.ok()) {
    std::printf("  seeding from this node's agent (%llu chunks cached)\n",
                static_cast<unsigned long long>(chunks));
  } else {
    std::printf("  not seeding: %s\n", s.ToString().c_str());
  }
}

// Seeds through this node's agent on a thread of its own (it runs its own
// event loop), while this thread goes on with the upload.
class BackgroundSeed {
 public:
  BackgroundSeed(const PublishArgs& a, const std::string& ref)
      : thread_([this, &a, ref] {
          status_ = SeedThroughAgent(a.agent_socket, ref, a.client.token, a.dir, &chunks_);
        }) {}
  ~BackgroundSeed() { Join(); }
  void JoinAndPrint(bool print) {
    Join();
    if (print) PrintSeeding(status_, chunks_);
  }

 private:
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  Status status_;
  uint64_t chunks_ = 0;
  std::thread thread_;  // last: it uses the fields above
};

// Commits the version before its upload ends (state `uploading`); the tags
// wait for durable unless --tag-early.
Result<SignedVersion> CommitEarly(const PublishArgs& a, TrackerClient& t, const std::string& bytes,
                                  PublishUploads& uploads) {
  CommitOptions opts;
  opts.pending = true;
  opts.tag_early = a.tag_early;
  Result<SignedVersion> v = t.Commit(bytes, a.tags, opts);
  if (!v.ok()) return v.status();
  if (v->state == VersionState::kUploading) {
    uploads.KeepAlive(v->manifest.name, v->id);
    if (a.json) return v;
    std::printf("committed %s/%s:%s; pullable from this node while the upload goes on\n",
                v->manifest.ns.c_str(), v->manifest.name.c_str(), v->id.ToHex().c_str());
    std::fflush(stdout);  // a script waiting on this line need not wait for the upload
  }
  return v;
}

// The uploads left once the folder is hashed, then the version made
// durable: by committing it now, or (committed early) by telling the
// tracker the upload is over. A failed upload marks an early version failed.
Result<SignedVersion> UploadAndCommit(const PublishArgs& a, TrackerClient& t,
                                      PublishUploads& uploads, const std::vector<ChunkId>& all,
                                      const std::string& bytes,
                                      std::optional<SignedVersion> early) {
  ProgressBar bar("uploading", 0);
  Status s =
      uploads.Finish(all, [&bar](uint64_t done, uint64_t planned) { bar.Update(done, planned); });
  bar.Finish();
  if (!early) return s.ok() ? t.Commit(bytes, a.tags) : Result<SignedVersion>(s);
  const Manifest& m = early->manifest;
  if (!s.ok()) {
    (void)t.FinishUpload(m.ns, m.name, early->id, s.ToString());
    return s;
  }
  Result<VersionState> state = t.FinishUpload(m.ns, m.name, early->id, "");
  if (!state.ok()) {
    return state.status().WithContext("mark " + m.ns + "/" + m.name + ":" + early->id.ShortHex() +
                                      " durable");
  }
  early->state = *state;
  return std::move(*early);
}

void PrintOrigin(const Origin& origin) {
  OriginCounters oc = origin.counters();
  std::printf("  origin: %llu PUT requests, %llu bytes sent; %llu HEAD requests\n",
              static_cast<unsigned long long>(oc.put.requests),
              static_cast<unsigned long long>(oc.put.bytes),
              static_cast<unsigned long long>(oc.head.requests));
}

Status RunPublish(PublishArgs& a) {
  Result<ModelRef> ref = ModelRef::Parse(a.name);
  if (!ref.ok()) return ref.status().WithContext("--name");
  SHOAL_RETURN_IF_ERROR(CheckPublishArgs(a));
  Result<uint64_t> memory = ParseByteSize(a.memory);
  if (!memory.ok()) return memory.status().WithContext("--memory");
  auto tracker = ConnectTracker(a.client);
  if (!tracker.ok()) return tracker.status();
  TrackerClient& t = **tracker;
  auto origin = OpenOrigin(a.origin);
  if (!origin.ok()) return origin.status().WithContext("open origin " + a.origin.url);

  // With an agent to seed, the version is committed once hashed, so hashing
  // must not wait for the uploads; without one, it keeps their pace and
  // every byte is read once.
  const bool seed = !a.no_seed && AgentListens(a.agent_socket);
  ChunkUploader up(**origin, a.parallelism, *memory,
                   seed ? ChunkUploader::WhenFull::kReadAgain : ChunkUploader::WhenFull::kWait);
  PublishUploads uploads(t, up, ref->ns(), UploadIdOf(a));
  Result<Manifest> built = HashWhileUploading(a, *ref, t.identity().subject, up, uploads);
  if (!built.ok()) return built.status();
  Manifest& m = *built;
  SHOAL_RETURN_IF_ERROR(AddLabelsAndParent(a, t, m));
  Result<std::string> bytes = EncodeManifest(m);
  if (!bytes.ok()) return bytes.status();
  auto sources = LocateChunks(m, a.dir);
  up.AddSources(sources);
  std::vector<ChunkId> all;
  all.reserve(sources.size());
  for (const auto& [id, src] : sources) all.push_back(id);

  std::optional<SignedVersion> early;
  std::optional<BackgroundSeed> seeding;
  if (seed) {
    Result<SignedVersion> v = CommitEarly(a, t, *bytes, uploads);
    if (!v.ok()) return v.status();
    early = std::move(*v);
    seeding.emplace(a, m.ns + "/" + m.name + ":" + early->id.ToHex());
  }
  Result<SignedVersion> committed = UploadAndCommit(a, t, uploads, all, *bytes, early);
  if (!committed.ok()) return committed.status();
  if (a.json) {
    CommittedJson j{&m, &*committed, a.tags, up.stats().uploaded_chunks, up.stats().uploaded_bytes};
    if (seeding) seeding->JoinAndPrint(false);
    std::fputs(j.ToString().c_str(), stdout);
    return Status::OK();
  }
  PrintPublished(a, m, *committed, up.stats(), all.size());
  if (seeding) {
    seeding->JoinAndPrint(true);
  } else if (!a.no_seed) {
    std::printf("  not seeding: no agent at %s (pass --agent, or --no-seed)\n",
                a.agent_socket.c_str());
  }
  PrintOrigin(**origin);
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
  cmd->add_flag("--json", a->json, "print the committed version as one JSON document");
  cmd->add_flag("--tag-early", a->tag_early,
                "move the tags as soon as the version is pullable, not once it is durable");
  cmd->add_option(
         "--memory", a->memory,
         "hashed chunks kept in memory for upload; past it hashing waits for the uploads, or "
         "(seeding) the chunks are read again")
      ->capture_default_str();
  cmd->add_flag("--no-hash-cache", a->no_hash_cache,
                "hash every file even if it is unchanged since the last publish");
  AddClientFlags(cmd, &a->client);
  AddOriginFlags(cmd, &a->origin);
  cmd->callback([a, run] { *run = [a] { return RunPublish(*a); }; });
}

}  // namespace shoal
