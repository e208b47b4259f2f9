#include "read/model_resolver.h"

#include <algorithm>
#include <ctime>
#include <optional>

#include "client/tracker_client.h"
#include "shoal/sha256.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

// Older entries are dropped when the cache grows past this.
constexpr size_t kMaxEntries = 4096;

}  // namespace

const FileEntry* ResolvedModel::Find(const std::string& path) const {
  auto it = by_path.find(path);
  return it == by_path.end() ? nullptr : &manifest.files[it->second];
}

std::string ResolvedModel::ETag(const FileEntry& f) const {
  Sha256 h;
  h.Update(version.data(), VersionId::kSize);
  h.Update(f.path.data(), f.path.size());
  return "\"" + h.Finish().ToHex() + "\"";
}

std::string ResolvedModel::LastModifiedHttp() const {
  std::time_t t = static_cast<std::time_t>(manifest.created_at_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string ResolvedModel::LastModifiedIso() const {
  return FormatUtcMillis(manifest.created_at_ms);
}

ModelResolver::ModelResolver(TrackerEndpoint tracker, std::chrono::milliseconds ttl)
    : tracker_(std::move(tracker)), ttl_(ttl) {}

ModelResolver::Clock::time_point ModelResolver::KeepUntil(int64_t token_expires_at_ms) const {
  const Clock::time_point now = Clock::now();
  Clock::time_point until = now + ttl_;
  if (token_expires_at_ms > 0) {
    const int64_t now_ms = NowMs();
    until = std::min(until, now + std::chrono::milliseconds(token_expires_at_ms - now_ms));
  }
  return until;
}

std::string ModelResolver::CommitKey(const std::string& ns, const std::string& name,
                                     const std::string& commit) {
  return ns + "/" + name + "@" + commit;
}

std::string ModelResolver::Key(const std::string& token, const std::string& ns,
                               const std::string& name, const std::string& ref) {
  return token + '\n' + ns + '/' + name + ':' + ref;
}

std::shared_ptr<const ResolvedModel> ModelResolver::Cached(const std::string& token,
                                                           const std::string& ns,
                                                           const std::string& name,
                                                           const std::string& ref) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = cache_.find(Key(token, ns, name, ref));
  if (it == cache_.end() || it->second.expires <= Clock::now()) return nullptr;
  return it->second.model;
}

void ModelResolver::Forget(const std::function<bool(const std::string& token)>& revoked) {
  // Keys start with the token and a newline (Key, ListTags).
  auto token_of = [](const std::string& key) { return key.substr(0, key.find('\n')); };
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = cache_.begin(); it != cache_.end();) {
    it = revoked(token_of(it->first)) ? cache_.erase(it) : std::next(it);
  }
  for (auto it = tags_cache_.begin(); it != tags_cache_.end();) {
    it = revoked(token_of(it->first)) ? tags_cache_.erase(it) : std::next(it);
  }
  for (auto it = scope_cache_.begin(); it != scope_cache_.end();) {
    it = revoked(it->first) ? scope_cache_.erase(it) : std::next(it);
  }
}

namespace {

// A tracker connection with `token`, or why not.
Result<std::unique_ptr<TrackerClient>> ConnectAs(const TrackerEndpoint& tracker,
                                                 const std::string& token, ReadError* error) {
  auto client = TrackerClient::Connect(tracker, token);
  if (!client.ok()) {
    const Status& s = client.status();
    // authenticate checks no scope: any refusal is of the token itself.
    if (s.code() == Status::Code::kUnauthenticated || s.code() == Status::Code::kPermissionDenied ||
        s.code() == Status::Code::kInvalidArgument) {
      *error = {ReadFailure::kBadToken, "the tracker refused the token: " + s.message()};
    } else {
      *error = ReadErrorFrom(s);
    }
  }
  return client;
}

}  // namespace

bool TokenScope::MayRead(const std::string& ns) const {
  return std::find(namespaces.begin(), namespaces.end(), "*") != namespaces.end() ||
         std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end();
}

namespace {

std::shared_ptr<const TokenScope> ScopeOf(const Identity& identity) {
  auto scope = std::make_shared<TokenScope>();
  scope->subject = identity.subject;
  scope->namespaces = identity.namespaces;
  return scope;
}

}  // namespace

ScopeResolution ModelResolver::Scope(const std::string& token) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = scope_cache_.find(token);
    if (it != scope_cache_.end() && it->second.expires > Clock::now())
      return {it->second.scope, {}};
  }
  ReadError error;
  auto client = ConnectAs(tracker_, token, &error);
  if (!client.ok()) return {nullptr, error};
  std::shared_ptr<const TokenScope> scope = ScopeOf((*client)->identity());
  std::lock_guard<std::mutex> l(mu_);
  if (scope_cache_.size() >= kMaxEntries) scope_cache_.clear();
  scope_cache_[token] = ScopeEntry{KeepUntil((*client)->identity().expires_at_ms), scope};
  return {scope, {}};
}

NamespacesResolution ModelResolver::ReadableNamespaces(const std::string& token) {
  ReadError error;
  auto client = ConnectAs(tracker_, token, &error);
  if (!client.ok()) return {nullptr, {}, error};
  NamespacesResolution out;
  out.scope = ScopeOf((*client)->identity());
  std::vector<std::string> names;
  for (const std::string& ns : out.scope->namespaces) {
    if (ns != "*") {
      names.push_back(ns);
      continue;
    }
    auto models = (*client)->ListModels("");
    if (!models.ok()) return {nullptr, {}, ReadErrorFrom(models.status())};
    for (const ModelInfo& m : *models) names.push_back(m.ns);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  out.namespaces = std::move(names);
  return out;
}

TagsResolution ModelResolver::ListTags(const std::string& token, const std::string& ns) {
  const std::string key = token + '\n' + ns;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = tags_cache_.find(key);
    if (it != tags_cache_.end() && it->second.expires > Clock::now())
      return {it->second.listing, {}};
  }
  ReadError error;
  auto client = ConnectAs(tracker_, token, &error);
  if (!client.ok()) return {nullptr, error};
  auto models = (*client)->ListModels(ns);
  if (!models.ok()) return {nullptr, ReadErrorFrom(models.status())};
  auto listing = std::make_shared<TagListing>();
  for (const ModelInfo& m : *models) {
    for (const auto& [tag, version] : m.tags) listing->tags.emplace_back(m.name, tag);
  }
  std::sort(listing->tags.begin(), listing->tags.end());
  std::lock_guard<std::mutex> l(mu_);
  if (tags_cache_.size() >= kMaxEntries) tags_cache_.clear();
  tags_cache_[key] = TagsEntry{KeepUntil((*client)->identity().expires_at_ms), listing};
  return {listing, {}};
}

Resolution ModelResolver::Resolve(const std::string& token, const std::string& ns,
                                  const std::string& name, const std::string& ref) {
  if (auto hit = Cached(token, ns, name, ref)) return {hit, {}};
  ReadError error;
  auto client = ConnectAs(tracker_, token, &error);
  if (!client.ok()) return {nullptr, error};
  auto v = (*client)->Resolve(ns, name, ref);
  if (!v.ok()) return {nullptr, ReadErrorFrom(v.status())};
  auto m = std::make_shared<ResolvedModel>();
  m->ns = ns;
  m->name = name;
  m->version = v->id;
  m->manifest = std::move(v->manifest);
  for (size_t i = 0; i < m->manifest.files.size(); ++i) m->by_path[m->manifest.files[i].path] = i;
  m->bundles = VersionBundles::Of(m->manifest);
  std::lock_guard<std::mutex> l(mu_);
  if (cache_.size() >= kMaxEntries) {
    for (auto it = cache_.begin(); it != cache_.end();) {
      it = it->second.expires <= Clock::now() ? cache_.erase(it) : std::next(it);
    }
    if (cache_.size() >= kMaxEntries) cache_.clear();
  }
  cache_[Key(token, ns, name, ref)] = Entry{KeepUntil((*client)->identity().expires_at_ms), m};
  // Versions are immutable: an imported version's commit names it for good.
  if (!m->manifest.source.commit.empty()) {
    if (commits_.size() >= kMaxEntries) commits_.clear();
    commits_[CommitKey(ns, name, m->manifest.source.commit)] = m->version;
  }
  return {m, {}};
}

Resolution ModelResolver::ResolveCommit(const std::string& token, const std::string& ns,
                                        const std::string& name, const std::string& commit) {
  constexpr size_t kVersionsSearched = 64;
  std::optional<VersionId> known;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = commits_.find(CommitKey(ns, name, commit));
    if (it != commits_.end()) known = it->second;
  }
  if (known) return Resolve(token, ns, name, known->ToHex());
  std::vector<VersionInfo> versions;
  {
    // Closed before Resolve opens its own: one tracker connection (and kj
    // event loop) per thread at a time.
    ReadError error;
    auto client = ConnectAs(tracker_, token, &error);
    if (!client.ok()) return {nullptr, error};
    auto listed = (*client)->ListVersions(ns, name);
    if (!listed.ok()) return {nullptr, ReadErrorFrom(listed.status())};
    versions = std::move(listed).value();
  }
  std::sort(versions.begin(), versions.end(), [](const VersionInfo& a, const VersionInfo& b) {
    return a.created_at_ms > b.created_at_ms;
  });
  if (versions.size() > kVersionsSearched) versions.resize(kVersionsSearched);
  for (const VersionInfo& v : versions) {
    if (v.state == VersionState::kFailed) continue;
    {
      // A version looked at before has its commit noted already: a miss
      // asked again costs one listing, not a manifest per version.
      std::lock_guard<std::mutex> l(mu_);
      if (examined_.count(v.id) != 0) continue;
    }
    Resolution r = Resolve(token, ns, name, v.id.ToHex());  // notes its commit
    if (!r.model) continue;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (examined_.size() >= kMaxEntries) examined_.clear();
      examined_.insert(v.id);
    }
    if (r.model->manifest.source.commit == commit) return r;
  }
  return {
      nullptr,
      {ReadFailure::kNoSuchKey, ns + "/" + name + " has no version imported from commit " + commit +
                                    " among its newest " + std::to_string(kVersionsSearched)}};
}

}  // namespace shoal
