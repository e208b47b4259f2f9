// `shoal import SOURCE --name ns/model [--tag T]... [--label k=v]...`
//
// Makes an ordinary Shoal version of a model where it lives: a hub
// (hf://org/repo[@revision]), a bucket (s3://bucket/prefix, with its own
// endpoint and credentials), web servers (http(s) URLs, or --from-list) or
// a folder (file:///path). Each file is read from the source once, as a
// stream: hashed piece by piece (BEP 52, and SHA-256 per file) and each
// piece the origin lacks uploaded from the same buffer, so nothing is
// staged on disk and memory stays bounded.
//
// Run again, an import reads nothing it has read before: files finished by
// an earlier run (on this machine, or recorded in a version of the model
// with the same source) whose chunks are in the origin are taken as they
// are, and an import of what is already there commits the same version.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <set>
#include <thread>

#include "cli/chunk_uploader.h"
#include "cli/client_flags.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "cli/publish_uploads.h"
#include "cli/version_json.h"
#include "import/file_ingest.h"
#include "import/import_source.h"
#include "shoal/byte_size.h"
#include "shoal/hash_cache.h"
#include "shoal/manifest_codec.h"
#include "shoal/model_ref.h"
#include "shoal/sha256.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

struct ImportArgs {
  std::string source;
  std::string from_list;
  std::string name;
  std::vector<std::string> tags;
  std::vector<std::string> labels;
  uint32_t piece_size = kDefaultPieceSize;
  int parallel = 8;         // pieces or files read at once
  int upload_parallel = 8;  // chunk uploads in flight
  std::string memory = "256MiB";
  bool no_resume = false;
  bool json = false;
  ClientFlags client;
  OriginOptions origin;
  ImportSourceOptions src;
  std::string source_endpoint, source_region, source_profile, source_ca_file;
};

// Versions of the model looked at for an earlier import of the same source.
constexpr size_t kVersionsSearched = 20;

// What identifies a file's content at its source, for the resume cache.
std::string ResumeKey(const ManifestSource& source, const SourceFile& f) {
  return source.url + "\n" + source.commit + "\n" + f.path + "\n" + std::to_string(f.size) + "\n" +
         f.etag;
}

Status CheckListing(const SourceListing& listing, const std::string& where) {
  if (listing.files.empty()) return Status::NotFound(where + " has no files");
  std::set<std::string> seen;
  for (const SourceFile& f : listing.files) {
    Status s = ValidateRelativePath(f.path);
    if (!s.ok()) return s.WithContext(where + " offers a file that cannot be imported");
    if (!seen.insert(f.path).second) {
      return Status::InvalidArgument(where + " offers '" + f.path + "' twice");
    }
  }
  return Status::OK();
}

FileEntry EntryOf(const SourceFile& f, const HashCache::Imported& got) {
  FileEntry e;
  e.path = f.path;
  e.size = got.hashes.size;
  e.pieces_root = got.hashes.pieces_root;
  e.piece_layer = got.hashes.piece_layer;
  e.sha256 = got.sha256;
  e.source_etag = f.etag;
  return e;
}

// Files an earlier import already read: from the resume cache, or from a
// version of this model imported from the same source commit. A file whose
// chunks the origin lacks is read again.
class EarlierImports {
 public:
  EarlierImports(TrackerClient& t, const std::string& ns, const std::string& name,
                 const ManifestSource& source, HashCache* cache, uint32_t piece_size)
      : cache_(cache), source_(source), piece_size_(piece_size) {
    if (cache == nullptr) return;  // --no-resume
    auto versions = t.ListVersions(ns, name);
    if (!versions.ok()) return;
    for (size_t i = 0; i < versions->size() && i < kVersionsSearched; ++i) {
      auto v = t.Resolve(ns, name, (*versions)[i].id.ToHex());
      if (v.ok() && v->manifest.source == source && v->manifest.piece_size == piece_size) {
        versions_.push_back(std::move(*v));
      }
    }
  }

  // The file as read before, if it was and its content cannot have changed.
  // Nothing with --no-resume (no cache).
  std::optional<HashCache::Imported> Find(const SourceFile& f) const {
    if (f.etag.empty() || !f.size_known) return std::nullopt;
    for (const SignedVersion& v : versions_) {
      for (const FileEntry& e : v.manifest.files) {
        if (e.path == f.path && e.size == f.size && e.source_etag == f.etag && e.sha256) {
          return HashCache::Imported{{e.size, e.pieces_root, e.piece_layer}, *e.sha256};
        }
      }
    }
    if (cache_ == nullptr) return std::nullopt;
    return cache_->GetImported(ResumeKey(source_, f), piece_size_);
  }

  // An earlier version with exactly these files, labels and source.
  const SignedVersion* Same(const Manifest& m) const {
    for (const SignedVersion& v : versions_) {
      if (v.manifest.files == m.files && v.manifest.labels == m.labels &&
          v.manifest.empty_dirs.empty()) {
        return &v;
      }
    }
    return nullptr;
  }

 private:
  HashCache* const cache_;
  const ManifestSource source_;
  const uint32_t piece_size_;
  std::vector<SignedVersion> versions_;
};

struct Plan {
  std::vector<FileEntry> entries;  // one per listed file; empty path = still to read
  std::vector<SourceFile> to_read;
  std::vector<size_t> read_index;  // entries index of each to_read
  uint64_t reused_bytes = 0;
  size_t reused_files = 0;
};

// Splits the listing into files taken from earlier imports (every chunk in
// the origin) and files to read.
Result<Plan> PlanReads(const SourceListing& listing, const EarlierImports& earlier,
                       TrackerClient& t, const std::string& ns, const std::string& upload_id) {
  Plan p;
  p.entries.resize(listing.files.size());
  for (size_t i = 0; i < listing.files.size(); ++i) {
    const SourceFile& f = listing.files[i];
    std::optional<HashCache::Imported> got = earlier.Find(f);
    if (got) {
      FileEntry e = EntryOf(f, *got);
      std::vector<ChunkId> ids = e.ChunkIds();
      auto plan = t.PlanUpload(ns, ids, upload_id);
      if (!plan.ok()) return plan.status();
      if (plan->upload.empty()) {
        p.entries[i] = std::move(e);
        p.reused_bytes += f.size;
        ++p.reused_files;
        continue;
      }
    }
    p.to_read.push_back(f);
    p.read_index.push_back(i);
  }
  return p;
}

// Reads the files of `p` while this thread plans and reports their uploads.
Status ReadWhileUploading(ImportArgs& a, ImportSource& source, const ManifestSource& provenance,
                          HashCache* cache, ChunkUploader& up, PublishUploads& uploads, Plan& p) {
  uint64_t total = 0;
  for (const SourceFile& f : p.to_read) total += f.size;
  ProgressBar bar("importing", total);
  IngestOptions opts;
  opts.piece_size = a.piece_size;
  opts.parallel = a.parallel;
  opts.on_piece = [&up](HashedPiece& piece) { up.Offer(piece); };
  opts.on_progress = [&bar, total](uint64_t done) { bar.Update(done, std::max(total, done)); };
  opts.on_file = [&](size_t i, const IngestedFile& got) {
    if (cache != nullptr) {
      cache->PutImported(ResumeKey(provenance, p.to_read[i]), a.piece_size,
                         {got.hashes, got.sha256});
    }
  };
  std::atomic<bool> read{false};
  std::optional<Result<std::vector<IngestedFile>>> ingested;
  std::thread reader([&] {
    ingested = IngestFiles(source, p.to_read, opts);
    read = true;
  });
  Status s;
  while (!read && s.ok()) s = uploads.Step(std::chrono::milliseconds(20));
  if (!s.ok()) up.Abort(s);
  reader.join();
  bar.Finish();
  if (!ingested->ok()) return ingested->status();
  SHOAL_RETURN_IF_ERROR(s);
  for (size_t k = 0; k < p.to_read.size(); ++k) {
    const IngestedFile& got = (**ingested)[k];
    p.entries[p.read_index[k]] = EntryOf(p.to_read[k], {got.hashes, got.sha256});
  }
  return Status::OK();
}

Status AddLabels(const std::vector<std::string>& labels, Manifest& m) {
  for (const std::string& kv : labels) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos)
      return Status::InvalidArgument("--label '" + kv + "' must be key=value");
    m.labels.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
  }
  m.Canonicalize();
  return Status::OK();
}

// Names this import for its upload leases: the same source imported under
// the same name is the same import, so a rerun takes its leases over.
std::string UploadIdOf(const ImportArgs& a, const ManifestSource& s) {
  const std::string key = "import\n" + s.url + "\n" + s.commit + "\n" + a.name;
  return Sha256::Of(key.data(), key.size()).ToHex().substr(0, 32);
}

uint64_t PeakRssBytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

void PrintImported(const Manifest& m, const SignedVersion& v, const Plan& p,
                   const UploadStats& stats, const std::vector<std::string>& tags) {
  std::printf("imported %s/%s:%s%s\n", m.ns.c_str(), m.name.c_str(), v.id.ToHex().c_str(),
              v.created ? "" : " (already existed)");
  std::printf("  from %s%s%s\n", m.source.url.c_str(),
              m.source.revision.empty() ? "" : ("@" + m.source.revision).c_str(),
              m.source.commit.empty() ? "" : (" (commit " + m.source.commit + ")").c_str());
  std::printf("  %zu files, %s; read %zu files (%s), %zu taken from an earlier import (%s)\n",
              m.files.size(), FormatBytes(m.TotalBytes()).c_str(), p.to_read.size(),
              FormatBytes(m.TotalBytes() - p.reused_bytes).c_str(), p.reused_files,
              FormatBytes(p.reused_bytes).c_str());
  std::printf("  uploaded %llu chunks (%s)\n",
              static_cast<unsigned long long>(stats.uploaded_chunks.load()),
              FormatBytes(stats.uploaded_bytes).c_str());
  std::printf("  peak memory: %s\n", FormatBytes(PeakRssBytes()).c_str());
  if (!tags.empty()) {
    std::string joined;
    for (const std::string& t : tags) joined += " " + t;
    std::printf("  tags:%s\n", joined.c_str());
  }
}

Result<std::unique_ptr<ImportSource>> OpenSource(ImportArgs& a) {
  if (!a.from_list.empty()) {
    auto lines = ReadUrlList(a.from_list);
    if (!lines.ok()) return lines.status();
    a.src.url_list = std::move(lines).value();
  }
  a.src.s3.endpoint = a.source_endpoint;
  a.src.s3.region = a.source_region;
  a.src.s3.profile = a.source_profile;
  a.src.s3.ca_file = a.source_ca_file;
  return OpenImportSource(a.source, a.src);
}

Status RunImport(ImportArgs& a) {
  Result<ModelRef> ref = ModelRef::Parse(a.name);
  if (!ref.ok()) return ref.status().WithContext("--name");
  if (a.origin.url.empty()) {
    return Status::InvalidArgument(
        "no origin; pass --origin file:///path or s3://bucket, or set SHOAL_ORIGIN");
  }
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(a.piece_size).WithContext("--piece-size"));
  Result<uint64_t> memory = ParseByteSize(a.memory);
  if (!memory.ok()) return memory.status().WithContext("--memory");
  auto source = OpenSource(a);
  if (!source.ok()) return source.status();
  auto tracker = ConnectTracker(a.client);
  if (!tracker.ok()) return tracker.status();
  TrackerClient& t = **tracker;
  auto origin = OpenOrigin(a.origin);
  if (!origin.ok()) return origin.status().WithContext("open origin " + a.origin.url);

  Result<SourceListing> listing = (*source)->List();
  if (!listing.ok()) return listing.status();
  SHOAL_RETURN_IF_ERROR(CheckListing(*listing, (*source)->Describe()));
  std::unique_ptr<HashCache> cache;
  if (!a.no_resume) {
    auto opened = HashCache::Open(HashCache::DefaultDir());
    if (opened.ok()) cache = std::move(opened).value();
  }
  const std::string upload_id = UploadIdOf(a, listing->provenance);
  const EarlierImports earlier(t, ref->ns(), ref->name(), listing->provenance, cache.get(),
                               a.piece_size);
  Result<Plan> plan = PlanReads(*listing, earlier, t, ref->ns(), upload_id);
  if (!plan.ok()) return plan.status();

  ChunkUploader up(**origin, a.upload_parallel, *memory, ChunkUploader::WhenFull::kWait);
  PublishUploads uploads(t, up, ref->ns(), upload_id);
  SHOAL_RETURN_IF_ERROR(
      ReadWhileUploading(a, **source, listing->provenance, cache.get(), up, uploads, *plan));
  Manifest m;
  m.ns = ref->ns();
  m.name = ref->name();
  m.created_by = t.identity().subject;
  m.created_at_ms = NowMs();
  m.piece_size = a.piece_size;
  m.files = plan->entries;
  m.source = listing->provenance;
  SHOAL_RETURN_IF_ERROR(AddLabels(a.labels, m));
  std::string bytes;
  if (const SignedVersion* same = earlier.Same(m)) {
    bytes = same->manifest_bytes;  // the same version: same bytes, same ID
    m = same->manifest;
  } else {
    if (auto latest = t.Resolve(m.ns, m.name, "latest"); latest.ok()) m.parent = latest->id;
    Result<std::string> encoded = EncodeManifest(m);
    if (!encoded.ok()) return encoded.status();
    bytes = std::move(encoded).value();
  }
  std::vector<ChunkId> all;
  for (const FileEntry& f : m.files) {
    for (const ChunkId& id : f.ChunkIds()) all.push_back(id);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  ProgressBar bar("uploading", 0);
  Status s =
      uploads.Finish(all, [&bar](uint64_t done, uint64_t planned) { bar.Update(done, planned); });
  bar.Finish();
  if (!s.ok()) return s.WithContext("upload to " + ref->ToString());
  Result<SignedVersion> committed = t.Commit(bytes, a.tags);
  if (!committed.ok()) return committed.status();
  if (a.json) {
    CommittedJson j{&m,
                    &*committed,
                    a.tags,
                    up.stats().uploaded_chunks,
                    up.stats().uploaded_bytes,
                    static_cast<int64_t>(m.TotalBytes() - plan->reused_bytes)};
    std::fputs(j.ToString().c_str(), stdout);
  } else {
    PrintImported(m, *committed, *plan, up.stats(), a.tags);
  }
  return Status::OK();
}

}  // namespace

void RegisterImport(CLI::App& app, CommandRunner* run) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import", "make a version of a model from a hub, a bucket or web servers, read once");
  cmd->add_option("source", a->source,
                  "hf://org/repo[@revision], oci://registry/repo:tag, s3://bucket/prefix, "
                  "file:///folder or an http(s) URL");
  cmd->add_option("--from-list", a->from_list, "file of URLs, one per line: URL [path]");
  cmd->add_option("--name", a->name, "namespace/model")->required();
  cmd->add_option("--tag", a->tags, "tag to point at the new version; repeatable");
  cmd->add_option("--label", a->labels, "key=value label; repeatable");
  cmd->add_option("--piece-size", a->piece_size, "bytes per chunk, a power of two")
      ->capture_default_str();
  cmd->add_option("--parallel", a->parallel, "pieces or files read from the source at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--upload-parallel", a->upload_parallel, "chunk uploads in flight")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--memory", a->memory, "read chunks kept for upload; past it reading waits")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "print the committed version as one JSON document");
  cmd->add_flag("--no-resume", a->no_resume,
                "read every file, even those an earlier import of the same source read");
  cmd->add_option("--hf-endpoint", a->src.hf_endpoint, "the hub for hf:// sources")
      ->envname("HF_ENDPOINT")
      ->capture_default_str();
  cmd->add_option("--hf-token", a->src.hf_token, "the hub's access token")->envname("HF_TOKEN");
  cmd->add_option("--oci-username", a->src.oci_username, "registry user for oci:// sources")
      ->envname("SHOAL_OCI_USERNAME");
  cmd->add_option("--oci-password", a->src.oci_password, "registry password or token")
      ->envname("SHOAL_OCI_PASSWORD");
  cmd->add_flag("--oci-plain-http", a->src.oci_plain_http,
                "speak plain HTTP to the registry (one on localhost)");
  cmd->add_option("--source-endpoint", a->source_endpoint,
                  "S3 endpoint of an s3:// source; empty = AWS (not the origin's)");
  cmd->add_option("--source-region", a->source_region, "signing region of an s3:// source");
  cmd->add_option("--source-profile", a->source_profile,
                  "AWS profile for an s3:// source's credentials (else AWS_* variables)");
  cmd->add_option("--source-ca-file", a->source_ca_file, "PEM bundle to trust for the source");
  cmd->add_flag(
      "--source-insecure",
      [a](int64_t) {
        a->src.web.verify_tls = false;
        a->src.s3.verify_tls = false;
      },
      "do not verify the source's TLS certificate");
  AddClientFlags(cmd, &a->client);
  AddOriginFlags(cmd, &a->origin);
  cmd->callback([a, run] {
    *run = [a] {
      if (a->source.empty() && a->from_list.empty()) {
        return Status::InvalidArgument(
            "give a source (hf://, s3://, file://, http(s)://) or --from-list");
      }
      a->src.web.ca_file = a->source_ca_file;
      return RunImport(*a);
    };
  });
}

}  // namespace shoal
