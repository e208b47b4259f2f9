#include "federation/namespace_mirror.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <unordered_set>

#include "client/tracker_client.h"
#include "common/tracker_metrics.h"
#include "registry/registry_store.h"
#include "shoal/log.h"
#include "shoal/manifest.h"
#include "shoal/manifest_signer.h"
#include "shoal/origin.h"
#include "shoal/tracker_endpoint.h"
#include "shoal/utc_time.h"
#include "storage/origin_chunks.h"
#include "swarm/torrent_index.h"

namespace shoal::tracker {
namespace {

constexpr int64_t kFirstRetryMs = 500;

std::string Named(const std::pair<std::string, std::string>& model) {
  return model.first + "/" + model.second;
}

// Of ns/name's upstream versions (newest first), the ones a mirror keeps:
// the newest durable one and every tagged durable one, oldest first.
std::vector<VersionInfo> Wanted(const std::vector<VersionInfo>& upstream) {
  std::vector<VersionInfo> out;
  bool newest = true;
  for (const VersionInfo& v : upstream) {
    if (v.state != VersionState::kDurable) continue;
    if (newest || !v.tags.empty()) out.push_back(v);
    newest = false;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// What the registry's audit log says of a write the mirror makes.
AuditEntry MirrorAudit(std::string action, std::string target, std::string detail) {
  AuditEntry a;
  a.at_ms = NowMs();
  a.subject = "mirror";
  a.action = std::move(action);
  a.target = std::move(target);
  a.detail = std::move(detail);
  return a;
}

}  // namespace

NamespaceMirror::NamespaceMirror(const MirrorDeps& d) : d_(d), pacer_(d.options.rate_bytes) {}

NamespaceMirror::~NamespaceMirror() { Stop(); }

void NamespaceMirror::Start() {
  thread_ = std::thread([this] {
    Run();
    finished_ = true;
  });
}

void NamespaceMirror::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

void NamespaceMirror::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

bool NamespaceMirror::Sleep(int64_t ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(ms, 0)),
               [this] { return stop_.load(); });
  return !stop_;
}

void NamespaceMirror::Run() {
  int64_t backoff = kFirstRetryMs;
  while (!stop_) {
    bool connected = false;
    Status s = Session(&connected);
    d_.metrics.follow_connected = 0;
    if (stop_) break;
    if (connected) backoff = kFirstRetryMs;
    d_.metrics.follow_errors++;
    Log(LogLevel::kWarn, "mirror.upstream_failed",
        {{"upstream", d_.options.upstream}, {"error", s.message()}, {"retry_ms", backoff}});
    if (!Sleep(backoff)) break;
    backoff = std::min(backoff * 2, d_.options.retry_max_ms);
  }
}

Status NamespaceMirror::Session(bool* connected) {
  TrackerEndpoint endpoint;
  endpoint.address = d_.options.upstream;
  endpoint.ca_file = d_.options.ca_file;
  auto up = TrackerClient::Connect(endpoint, d_.options.token, d_.options.key_hex);
  if (!up.ok()) return up.status();
  const std::vector<std::string>& namespaces = d_.options.namespaces;
  Result<WatchReply> start = (*up)->Watch(namespaces, 0, 0);
  if (!start.ok()) return start.status();
  *connected = true;
  d_.metrics.follow_connected = 1;
  Log(LogLevel::kInfo, "mirror.connected",
      {{"upstream", d_.options.upstream},
       {"upstream_key", ManifestKeyId((*up)->public_key())},
       {"position", static_cast<int64_t>(start->position)}});
  uint64_t position = start->position;
  SHOAL_RETURN_IF_ERROR(ReconcileAll(**up));
  while (!stop_) {
    int64_t wait = d_.options.wait_ms;
    const int64_t now = NowMs();
    for (const auto& [model, r] : retries_) wait = std::min(wait, r.at_ms - now);
    Result<WatchReply> w =
        (*up)->Watch(namespaces, position, static_cast<uint32_t>(std::max<int64_t>(wait, 0)));
    if (!w.ok()) return w.status();
    if (w->position < position) {  // the upstream's registry was replaced: read it all again
      position = w->position;
      SHOAL_RETURN_IF_ERROR(ReconcileAll(**up));
      continue;
    }
    position = w->position;
    d_.metrics.follow_events += w->events.size();
    if (!w->events.empty()) {
      Log(LogLevel::kDebug, "mirror.events",
          {{"events", static_cast<int64_t>(w->events.size())},
           {"position", static_cast<int64_t>(position)}});
    }
    std::set<Model> models;
    for (const ModelEvent& e : w->events) models.insert({e.ns, e.name});
    const int64_t due = NowMs();
    for (const auto& [model, r] : retries_) {
      if (r.at_ms <= due) models.insert(model);
    }
    for (const Model& m : models) {
      if (stop_) break;
      ReconcileModel(**up, m);  // a failure is retried on its own schedule
    }
  }
  return Status::OK();
}

Status NamespaceMirror::ReconcileAll(TrackerClient& up) {
  for (const std::string& ns : d_.options.namespaces) {
    Result<std::vector<ModelInfo>> models = up.ListModels(ns);
    if (!models.ok()) return models.status().WithContext("listing " + ns + " upstream");
    for (const ModelInfo& m : *models) {
      if (stop_) return Status::OK();
      ReconcileModel(up, {m.ns, m.name});
    }
  }
  return Status::OK();
}

void NamespaceMirror::ReconcileModel(TrackerClient& up, const Model& model) {
  // What the upstream names is checked before it touches this registry.
  Status named = d_.options.Mirrors(model.first)
                     ? ValidateName("model name", model.second)
                     : Status::InvalidArgument("namespace '" + model.first + "' is not followed");
  if (!named.ok()) {
    d_.metrics.follow_errors++;
    Log(LogLevel::kWarn, "mirror.model_refused",
        {{"model", Named(model).substr(0, 300)}, {"error", named.message()}});
    return;
  }
  Status s = [&]() -> Status {
    Result<std::vector<VersionInfo>> listed = up.ListVersions(model.first, model.second);
    if (!listed.ok()) {
      // A model deleted upstream: this mirror's retention is its own.
      if (listed.status().IsNotFound()) {
        NoteBehind(model, {});
        return Status::OK();
      }
      return listed.status();
    }
    Result<LocalModel> here = ReadLocal(model);
    if (!here.ok()) return here.status();
    std::vector<std::pair<VersionId, int64_t>> behind;
    for (const VersionInfo& v : Wanted(*listed)) {
      if (here->versions.count(v.id) == 0) behind.emplace_back(v.id, v.created_at_ms);
    }
    NoteBehind(model, behind);
    Status copied;
    while (!behind.empty() && !stop_) {
      copied = CopyVersion(up, model, behind.front().first);
      if (!copied.ok()) break;
      here->versions.insert(behind.front().first);
      behind.erase(behind.begin());
      NoteBehind(model, behind);
    }
    // Tags whose versions are here move even when a later copy failed.
    Status tagged = MoveTags(model, *listed, &*here);
    return copied.ok() ? tagged : copied;
  }();
  if (s.ok()) {
    retries_.erase(model);
    return;
  }
  d_.metrics.follow_errors++;
  Retry& r = retries_[model];
  r.backoff_ms =
      r.backoff_ms == 0 ? kFirstRetryMs : std::min(r.backoff_ms * 2, d_.options.retry_max_ms);
  r.at_ms = NowMs() + r.backoff_ms;
  Log(LogLevel::kWarn, "mirror.model_failed",
      {{"model", Named(model)}, {"error", s.message()}, {"retry_ms", r.backoff_ms}});
}

Result<NamespaceMirror::LocalModel> NamespaceMirror::ReadLocal(const Model& model) {
  LocalModel out;
  std::string after, next;
  do {
    Result<std::vector<VersionInfo>> page =
        d_.store.ListVersions(model.first, model.second, after, 1000, &next);
    if (!page.ok()) return page.status();
    for (const VersionInfo& v : *page) {
      out.versions.insert(v.id);
      for (const std::string& tag : v.tags) out.tags.emplace(tag, v.id);
    }
    after = next;
  } while (!after.empty());
  return out;
}

Status NamespaceMirror::CopyVersion(TrackerClient& up, const Model& model, const VersionId& id) {
  const auto started = std::chrono::steady_clock::now();
  const std::string target = Named(model) + ":" + id.ToHex();
  // Resolve checks the upstream's signature and the manifest's hash.
  Result<SignedVersion> signed_version = up.Resolve(model.first, model.second, id.ToHex());
  if (!signed_version.ok()) return signed_version.status().WithContext("resolving " + target);
  const Manifest& m = signed_version->manifest;
  if (signed_version->id != id || m.ns != model.first || m.name != model.second) {
    return Status::Corruption("upstream answered " + target + " with version " +
                              signed_version->id.ToHex() + " of " + m.ns + "/" + m.name);
  }
  const std::vector<ChunkRef> all = ChunksOf(m);
  std::vector<ChunkId> ids;
  ids.reserve(all.size());
  for (const ChunkRef& c : all) ids.push_back(c.id);
  OriginChunks here{d_.store, d_.origin, d_.metrics, std::max(4, d_.options.parallelism)};
  Result<std::vector<ChunkId>> lacking = ChunksNotInOrigin(here, ids);
  if (!lacking.ok()) return lacking.status().WithContext("checking " + target + " here");
  const std::unordered_set<ChunkId> lack(lacking->begin(), lacking->end());
  std::vector<ChunkRef> missing;
  uint64_t missing_bytes = 0;
  for (const ChunkRef& c : all) {
    if (lack.count(c.id) == 0) continue;
    missing.push_back(c);
    missing_bytes += c.size;
  }
  d_.metrics.follow_chunks_present += all.size() - missing.size();
  d_.metrics.follow_bytes_behind = missing_bytes;
  ChunkCopyDeps deps{d_.store, d_.upstream_origin, d_.origin,
                     pacer_,   d_.metrics,         d_.options.parallelism};
  Status copied = CopyChunks(deps, missing, stop_, &d_.metrics.follow_bytes_behind);
  d_.metrics.follow_bytes_behind = 0;
  if (!copied.ok()) return copied.WithContext("copying " + target);

  StoredVersion sv;
  sv.id = signed_version->id;
  sv.manifest_bytes = signed_version->manifest_bytes;
  sv.signature = d_.signer.Sign(sv.id);
  sv.signer_key_id = d_.signer.key_id();
  sv.created_at_ms = m.created_at_ms;
  sv.upstream.tracker = d_.options.upstream;
  sv.upstream.signature = signed_version->signature;
  sv.upstream.public_key = up.public_key();
  sv.upstream.signer_key_id = ManifestKeyId(sv.upstream.public_key);
  sv.upstream.copied_at_ms = NowMs();
  const AuditEntry audit = MirrorAudit("publish", target, "from " + d_.options.upstream);
  Result<bool> created = d_.store.CommitVersion(m, sv, {}, audit);
  if (!created.ok()) return created.status().WithContext("committing " + target);
  d_.torrents.Add(sv.id, m);
  if (*created) d_.metrics.follow_versions_copied++;
  if (d_.options.warm && d_.warm) d_.warm(model.first, model.second, sv.id, ids);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Log(LogLevel::kInfo, "mirror.version_copied",
      {{"version", target},
       {"chunks", static_cast<int64_t>(all.size())},
       {"chunks_copied", static_cast<int64_t>(missing.size())},
       {"bytes_copied", static_cast<int64_t>(missing_bytes)},
       {"seconds", seconds},
       {"lag_seconds", static_cast<double>(NowMs() - m.created_at_ms) / 1000.0}});
  return Status::OK();
}

Status NamespaceMirror::MoveTags(const Model& model, const std::vector<VersionInfo>& upstream,
                                 LocalModel* here) {
  Status refused;
  for (const VersionInfo& v : upstream) {
    for (const std::string& tag : v.tags) {
      Status valid = ValidateTag(tag);
      if (!valid.ok()) {
        refused = valid.WithContext("a tag upstream");
        continue;
      }
      auto at = here->tags.find(tag);
      std::optional<VersionId> now;
      if (at != here->tags.end()) now = at->second;
      // Only onto a version whose bytes are here.
      if ((now && *now == v.id) || here->versions.count(v.id) == 0) continue;
      TagChange change{model.first, model.second, tag, now, v.id, "mirror", NowMs()};
      AuditEntry audit = MirrorAudit("tag", Named(model) + ":" + tag,
                                     (now ? now->ToHex() : std::string("(new)")) + " -> " +
                                         v.id.ToHex() + " from " + d_.options.upstream);
      Result<std::optional<VersionId>> moved = d_.store.SetTag(change, audit);
      if (!moved.ok()) return moved.status();
      here->tags[tag] = v.id;
      d_.metrics.follow_tag_moves++;
      Log(LogLevel::kInfo, "mirror.tag_moved",
          {{"model", Named(model)}, {"tag", tag}, {"version", v.id.ToHex()}});
    }
  }
  return refused;
}

void NamespaceMirror::NoteBehind(const Model& model,
                                 std::vector<std::pair<VersionId, int64_t>> behind) {
  if (behind.empty()) {
    behind_.erase(model);
  } else {
    behind_[model] = std::move(behind);
  }
  uint64_t versions = 0;
  int64_t oldest = 0;
  for (const auto& [m, list] : behind_) {
    versions += list.size();
    for (const auto& [id, at] : list) {
      if (oldest == 0 || at < oldest) oldest = at;
    }
  }
  d_.metrics.follow_versions_behind = versions;
  d_.metrics.follow_oldest_behind_ms = oldest;
}

}  // namespace shoal::tracker
