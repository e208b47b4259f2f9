// `shoal inspect DIR`: hash a checkpoint folder and show its manifest.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/client_flags.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "shoal/log.h"
#include "shoal/manifest_builder.h"
#include "shoal/manifest_codec.h"
#include "shoal/model_ref.h"

namespace shoal {
namespace {

struct InspectArgs {
  std::string target;
  bool json = false;
  bool follow_symlinks = false;
  uint32_t piece_size = kDefaultPieceSize;
  int threads = 0;
  std::string name;
  ClientFlags client;
};

// The manifest's JSON with the version's state and the tags on it now.
std::string TrackerVersionJson(TrackerClient& t, const SignedVersion& v) {
  std::string tags;
  if (auto versions = t.ListVersions(v.manifest.ns, v.manifest.name); versions.ok()) {
    for (const VersionInfo& info : *versions) {
      if (info.id != v.id) continue;
      for (const std::string& tag : info.tags) {
        if (!tags.empty()) tags += ", ";
        AppendJsonString(tag, &tags);
      }
    }
  }
  std::string json = ManifestToJson(v.manifest, v.id);
  std::string extra =
      ",\n\"state\": \"" + std::string(VersionStateName(v.state)) + "\",\n\"tags\": [" + tags + "]";
  extra += ",\n\"signer_key\": ";
  AppendJsonString(v.signer_key_id, &extra);
  if (!v.upstream.empty()) {
    extra += ",\n\"mirrored_from\": {\"tracker\": ";
    AppendJsonString(v.upstream.tracker, &extra);
    extra += ", \"signer_key\": ";
    AppendJsonString(v.upstream.signer_key_id, &extra);
    extra += ", \"copied_at_ms\": " + std::to_string(v.upstream.copied_at_ms) + "}";
  }
  return json.insert(json.find(",\n\"manifest\""), extra);
}

// Where an imported version came from, and each file's ETag and SHA-256
// at the source.
void PrintSource(const Manifest& m) {
  if (m.source.empty()) return;
  std::printf("imported from %s", m.source.url.c_str());
  if (!m.source.revision.empty()) std::printf(" revision %s", m.source.revision.c_str());
  if (!m.source.commit.empty()) std::printf(" commit %s", m.source.commit.c_str());
  std::printf("\n");
  for (const FileEntry& f : m.files) {
    std::printf("  source %s etag %s sha256 %s\n", f.path.c_str(),
                f.source_etag.empty() ? "-" : f.source_etag.c_str(),
                f.sha256 ? f.sha256->ToHex().c_str() : "-");
  }
}

void PrintSummary(const Manifest& m, const VersionId& id) {
  std::printf("%s/%s  piece size %s  version %s\n", m.ns.c_str(), m.name.c_str(),
              FormatBytes(m.piece_size).c_str(), id.ToHex().c_str());
  size_t width = 4;
  for (const FileEntry& f : m.files) width = std::max(width, f.path.size());
  width = std::min<size_t>(width, 60);
  std::printf("  %-*s %12s %8s  %s\n", static_cast<int>(width), "PATH", "SIZE", "PIECES",
              "PIECES ROOT");
  for (const FileEntry& f : m.files) {
    std::printf("  %-*s %12s %8llu  %s\n", static_cast<int>(width), f.path.c_str(),
                FormatBytes(f.size).c_str(),
                static_cast<unsigned long long>(f.ChunkCount(m.piece_size)),
                f.size == 0 ? "(empty)" : f.pieces_root.ToHex().c_str());
  }
  for (const std::string& d : m.empty_dirs) {
    std::printf("  %-*s %12s\n", static_cast<int>(width), (d + "/").c_str(), "(folder)");
  }
  std::printf("%zu files, %s (%llu bytes), %llu pieces", m.files.size(),
              FormatBytes(m.TotalBytes()).c_str(), static_cast<unsigned long long>(m.TotalBytes()),
              static_cast<unsigned long long>(m.TotalChunks()));
  if (!m.empty_dirs.empty()) std::printf(", %zu empty folders", m.empty_dirs.size());
  std::printf("\n");
}

// `shoal inspect ns/model:ref`: the published manifest, signature checked.
Status InspectPublished(const InspectArgs& args) {
  Result<ModelRef> ref = ModelRef::Parse(args.target);
  if (!ref.ok()) {
    return Status::InvalidArgument("'" + args.target +
                                   "' is neither a folder nor namespace/model[:tag]");
  }
  auto t = ConnectTracker(args.client);
  if (!t.ok()) return t.status();
  auto v = (*t)->Resolve(ref->ns(), ref->name(), ref->ref());
  if (!v.ok()) return v.status();
  if (args.json) {
    std::fputs(TrackerVersionJson(**t, *v).c_str(), stdout);
    return Status::OK();
  }
  PrintSummary(v->manifest, v->id);
  const Manifest& m = v->manifest;
  std::printf("created by %s at %s, parent %s, signed by tracker key %s\n", m.created_by.c_str(),
              FormatTime(m.created_at_ms).c_str(),
              m.parent ? m.parent->ShortHex().c_str() : "(none)", v->signer_key_id.c_str());
  for (const Label& l : m.labels) std::printf("label %s=%s\n", l.key.c_str(), l.value.c_str());
  PrintSource(m);
  if (!v->upstream.empty()) {
    // The client checked it against the key it carries (tracker_client.h).
    std::printf("mirrored from %s at %s, signed there by tracker key %s\n",
                v->upstream.tracker.c_str(), FormatTime(v->upstream.copied_at_ms).c_str(),
                v->upstream.signer_key_id.c_str());
  }
  if (v->state == VersionState::kUploading) {
    std::printf("state: uploading (not all in the origin yet; its publisher's peers serve it)\n");
  }
  return Status::OK();
}

Status RunInspect(const InspectArgs& args) {
  struct stat st;
  if (::stat(args.target.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (args.target.find('/') != std::string::npos && args.target[0] != '/' &&
        args.target[0] != '.') {
      return InspectPublished(args);
    }
    return Status::InvalidArgument("'" + args.target +
                                   "' is not a folder; give a checkpoint folder to inspect");
  }
  BuildOptions opts;
  opts.hash.piece_size = args.piece_size;
  opts.hash.threads = args.threads;
  opts.follow_symlinks = args.follow_symlinks;
  if (!args.name.empty()) {
    size_t slash = args.name.find('/');
    if (slash == std::string::npos) {
      return Status::InvalidArgument("--name '" + args.name + "' must be namespace/model");
    }
    opts.ns = args.name.substr(0, slash);
    opts.name = args.name.substr(slash + 1);
  }
  ProgressBar bar("hashing", 0);
  Result<Manifest> m = BuildManifest(
      args.target, opts, [&](uint64_t done, uint64_t total) { bar.Update(done, total); });
  if (!m.ok()) return m.status();
  bar.Finish();
  Result<std::string> bytes = EncodeManifest(*m);
  if (!bytes.ok()) return bytes.status();
  VersionId id = ComputeVersionId(*bytes);
  if (args.json) {
    std::fputs(ManifestToJson(*m, id).c_str(), stdout);
  } else {
    PrintSummary(*m, id);
  }
  return Status::OK();
}

}  // namespace

void RegisterInspect(CLI::App& app, CommandRunner* run) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "hash a checkpoint folder and show its manifest");
  cmd->add_option("target", args->target, "checkpoint folder, or ns/model:tag on the tracker")
      ->required();
  cmd->add_flag("--json", args->json, "print the manifest as JSON");
  cmd->add_flag("--follow-symlinks", args->follow_symlinks,
                "hash the targets of symbolic links instead of refusing them");
  cmd->add_option("--piece-size", args->piece_size,
                  "bytes per piece: a power of two from 16 KiB to 64 MiB")
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "hashing threads; 0 = one per core")
      ->capture_default_str();
  cmd->add_option("--name", args->name, "namespace/model to put in the manifest");
  AddClientFlags(cmd, &args->client);
  cmd->callback([args, run] { *run = [args] { return RunInspect(*args); }; });
}

}  // namespace shoal
