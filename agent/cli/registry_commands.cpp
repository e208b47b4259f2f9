// Registry commands: `shoal ls`, `shoal tag`, `shoal rm`, `shoal gc`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>

#include "cli/client_flags.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "proto/json_records.h"
#include "proto/record_codec.h"
#include "shoal/duration.h"
#include "shoal/model_ref.h"

namespace shoal {

std::string FormatTime(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

namespace {

// One row per version. The STATE column comes last and is blank for a
// durable version, so scripts that cut the columns before it still work.
void PrintVersions(const std::vector<VersionInfo>& versions) {
  std::vector<std::string> tags(versions.size());
  size_t width = 4;  // "TAGS"
  for (size_t i = 0; i < versions.size(); ++i) {
    for (const std::string& tag : versions[i].tags) tags[i] += (tags[i].empty() ? "" : ",") + tag;
    width = std::max(width, tags[i].size());
  }
  std::printf("%-64s  %-20s  %10s  %5s  %-12s %-*s  %s\n", "VERSION", "CREATED", "SIZE", "FILES",
              "BY", static_cast<int>(width), "TAGS", "STATE");
  for (size_t i = 0; i < versions.size(); ++i) {
    const VersionInfo& v = versions[i];
    std::string state;
    if (v.state != VersionState::kDurable) {
      state = std::string(VersionStateName(v.state)) +
              (v.state_detail.empty() ? "" : " (" + v.state_detail + ")");
    }
    std::printf("%s  %-20s  %10s  %5u  %-12s %-*s%s%s\n", v.id.ToHex().c_str(),
                FormatTime(v.created_at_ms).c_str(), FormatBytes(v.total_bytes).c_str(),
                v.file_count, v.created_by.c_str(), static_cast<int>(state.empty() ? 0 : width),
                tags[i].c_str(), state.empty() ? "" : "  ", state.c_str());
  }
}

struct LsArgs {
  std::string target;               // "", "ns" or "ns/model"
  std::vector<std::string> labels;  // only versions carrying every one ("key=value")
  bool latest = false;              // only the newest version
  bool json = false;                // one JSON array, as the tracker's /v1 view prints it
  ClientFlags client;
};

Status RunLs(const LsArgs& a) {
  auto t = ConnectTracker(a.client);
  if (!t.ok()) return t.status();
  size_t slash = a.target.find('/');
  if (slash == std::string::npos && (!a.labels.empty() || a.latest)) {
    return Status::InvalidArgument(
        "--label and --latest list the versions of one model: give "
        "ns/model");
  }
  if (slash == std::string::npos) {
    auto models = (*t)->ListModels(a.target);
    if (!models.ok()) return models.status();
    if (a.json) {
      std::printf("%s\n", JsonArray<proto::ModelSummary>(*models, FillModelInfo).c_str());
      return Status::OK();
    }
    for (const ModelInfo& m : *models) {
      std::string tags;
      for (const auto& [tag, id] : m.tags) tags += " " + tag + "=" + id.ShortHex();
      std::printf("%s/%s  %u versions  latest %s  %s%s\n", m.ns.c_str(), m.name.c_str(),
                  m.version_count, m.latest ? m.latest->ShortHex().c_str() : "-",
                  m.latest_at_ms ? FormatTime(m.latest_at_ms).c_str() : "", tags.c_str());
    }
    if (models->empty()) std::printf("no models\n");
    return Status::OK();
  }
  Result<ModelRef> ref = ModelRef::Parse(a.target);
  if (!ref.ok()) return ref.status();
  auto versions = (*t)->ListVersions(ref->ns(), ref->name(), a.labels);
  if (!versions.ok()) return versions.status();
  if (a.json && !(a.latest && versions->empty())) {
    if (a.latest && versions->size() > 1) versions->resize(1);
    std::printf("%s\n", JsonArray<proto::VersionSummary>(*versions, FillVersionInfo).c_str());
    return Status::OK();
  }
  if (versions->empty() && !a.labels.empty()) {
    const std::string what = NoVersionWithLabels(ref->ns() + "/" + ref->name(), a.labels);
    if (a.latest) return Status::NotFound(what);
    std::printf("%s\n", what.c_str());
    return Status::OK();
  }
  if (a.latest && versions->size() > 1) versions->resize(1);  // newest first
  PrintVersions(*versions);
  return Status::OK();
}

struct TagArgs {
  std::string ref;
  std::string tag;
  bool history = false;
  ClientFlags client;
};

Status RunTag(const TagArgs& a) {
  Result<ModelRef> ref = ModelRef::Parse(a.ref, /*require_ref=*/!a.history);
  if (!ref.ok()) return ref.status();
  auto t = ConnectTracker(a.client);
  if (!t.ok()) return t.status();
  if (a.history) {
    auto events = (*t)->TagHistory(ref->ns(), ref->name(), a.tag);
    if (!events.ok()) return events.status();
    for (const TagChange& e : *events) {
      std::printf("%s  %-12s %s -> %s\n", FormatTime(e.at_ms).c_str(), e.by.c_str(),
                  e.from ? e.from->ShortHex().c_str() : "(none)",
                  e.to ? e.to->ShortHex().c_str() : "(removed)");
    }
    return Status::OK();
  }
  auto target = (*t)->Resolve(ref->ns(), ref->name(), ref->ref());
  if (!target.ok()) return target.status();
  auto prev = (*t)->SetTag(ref->ns(), ref->name(), a.tag, target->id);
  if (!prev.ok()) return prev.status();
  std::printf("%s/%s:%s -> %s (was %s)\n", ref->ns().c_str(), ref->name().c_str(), a.tag.c_str(),
              target->id.ShortHex().c_str(), *prev ? (*prev)->ShortHex().c_str() : "unset");
  return Status::OK();
}

struct RmArgs {
  std::string ref;
  bool force = false;
  ClientFlags client;
};

Status RunRm(const RmArgs& a) {
  Result<ModelRef> ref = ModelRef::Parse(a.ref, /*require_ref=*/true);
  if (!ref.ok()) return ref.status();
  auto t = ConnectTracker(a.client);
  if (!t.ok()) return t.status();
  auto target = (*t)->Resolve(ref->ns(), ref->name(), ref->ref());
  if (!target.ok()) return target.status();
  SHOAL_RETURN_IF_ERROR((*t)->DeleteVersion(ref->ns(), ref->name(), target->id, a.force));
  std::printf("deleted %s/%s:%s\n", ref->ns().c_str(), ref->name().c_str(),
              target->id.ToHex().c_str());
  return Status::OK();
}

struct GcArgs {
  bool dry_run = false;
  std::string grace;  // empty = the tracker's --gc-grace
  ClientFlags client;
};

Status RunGc(const GcArgs& a) {
  int64_t grace = -1;
  if (!a.grace.empty()) {
    auto d = ParseDuration(a.grace, /*allow_zero=*/true);
    if (!d.ok()) return d.status().WithContext("--grace");
    grace = d->count();
  }
  auto t = ConnectTracker(a.client);
  if (!t.ok()) return t.status();
  auto g = (*t)->Gc(a.dry_run, grace);
  if (!g.ok()) return g.status();
  std::printf(
      "%s: %llu chunks referenced, %llu unreferenced and past grace, %llu inside grace; "
      "swept %llu chunks (%s)\n",
      a.dry_run ? "gc dry run" : "gc", static_cast<unsigned long long>(g->referenced),
      static_cast<unsigned long long>(g->unreferenced), static_cast<unsigned long long>(g->young),
      static_cast<unsigned long long>(g->swept), FormatBytes(g->swept_bytes).c_str());
  return Status::OK();
}

struct WarmArgs {
  std::string ref;
  std::string nodes;
  ClientFlags client;
};

Status RunWarm(const WarmArgs& a) {
  Result<ModelRef> ref = ModelRef::Parse(a.ref);
  if (!ref.ok()) return ref.status();
  auto t = ConnectTracker(a.client);
  if (!t.ok()) return t.status();
  ProgressBar bar("warming", 0, "chunks");
  auto w = (*t)->Warm(ref->ns(), ref->name(), ref->ref(), a.nodes, [&bar](const WarmProgress& p) {
    if (p.nodes > 0)
      bar.SetDetail(std::to_string(p.nodes_done) + "/" + std::to_string(p.nodes) + " nodes done");
    bar.Update(p.chunks_done, p.chunks);
  });
  bar.Finish();
  if (!w.ok()) return w.status();
  std::printf(
      "warmed %s: %u chunks across %u owners; %u fetched from the origin (%s), the rest were "
      "cached",
      ref->ToString().c_str(), w->chunks, w->owners, w->fetched, FormatBytes(w->bytes).c_str());
  if (w->nodes > 0)
    std::printf("; %u of %u nodes took the whole version", w->nodes - w->nodes_failed, w->nodes);
  std::printf("\n");
  if (w->failed > 0) {
    return Status::Unavailable(std::to_string(w->failed) +
                               " chunks could not be warmed; see the agents' logs");
  }
  if (w->nodes_failed > 0) {
    return Status::Unavailable(std::to_string(w->nodes_failed) + " of " + std::to_string(w->nodes) +
                               " nodes could not take the version; see the agents' logs");
  }
  return Status::OK();
}

}  // namespace

void RegisterRegistryCommands(CLI::App& app, CommandRunner* run) {
  auto ls = std::make_shared<LsArgs>();
  CLI::App* c = app.add_subcommand("ls", "list models, or the versions of one model");
  c->add_option("target", ls->target, "namespace, or namespace/model; empty = every namespace");
  c->add_option("--label", ls->labels,
                "only the versions carrying this key=value label; repeatable, all must match");
  c->add_flag("--latest", ls->latest, "only the newest version (of those with the labels)");
  c->add_flag("--json", ls->json,
              "print one JSON array: models, or versions with their tags, labels and state");
  AddClientFlags(c, &ls->client);
  c->callback([ls, run] { *run = [ls] { return RunLs(*ls); }; });

  auto tag = std::make_shared<TagArgs>();
  c = app.add_subcommand("tag", "point a tag at a version: shoal tag ns/model:version TAG");
  c->add_option("ref", tag->ref, "ns/model:version-or-tag")->required();
  c->add_option("tag", tag->tag, "the tag to move")->required();
  c->add_flag("--history", tag->history, "show every move of the tag instead");
  AddClientFlags(c, &tag->client);
  c->callback([tag, run] { *run = [tag] { return RunTag(*tag); }; });

  auto rm = std::make_shared<RmArgs>();
  c = app.add_subcommand("rm", "delete a version (admin)");
  c->add_option("ref", rm->ref, "ns/model:version")->required();
  c->add_flag("--force", rm->force, "delete even if tags point at it");
  AddClientFlags(c, &rm->client);
  c->callback([rm, run] { *run = [rm] { return RunRm(*rm); }; });

  auto warm = std::make_shared<WarmArgs>();
  c = app.add_subcommand("warm",
                         "have each chunk's owner agent fetch a version ahead of a scale-out");
  c->add_option("ref", warm->ref, "ns/model[:tag-or-version]")->required();
  c->add_option(
      "--nodes", warm->nodes,
      "also have these agents take the whole version from the swarm: all, a count N, or key=value "
      "(zone=... or an agent --label)");
  AddClientFlags(c, &warm->client);
  c->callback([warm, run] { *run = [warm] { return RunWarm(*warm); }; });

  auto gc = std::make_shared<GcArgs>();
  c = app.add_subcommand("gc", "sweep origin chunks no version references (admin)");
  c->add_flag("--dry-run", gc->dry_run, "count, delete nothing");
  c->add_option("--grace", gc->grace, "keep unreferenced chunks younger than this (e.g. 24h)");
  AddClientFlags(c, &gc->client);
  c->callback([gc, run] { *run = [gc] { return RunGc(*gc); }; });
}

}  // namespace shoal
