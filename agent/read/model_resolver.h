// ModelResolver: turns (token, ns/name:ref) into a signed, verified
// manifest by asking the tracker with the caller's own token, so the
// tracker's namespace scopes decide what a pod may read. The agent cannot
// check tokens itself.
//
// Successful answers are kept for `ttl` per (token, reference), so a reader
// does not pay a tracker round trip per request, and a tag moved on the
// tracker is seen within `ttl`. An answer is never kept past the expiry of
// the token it was given to (the tracker says when, on connecting), so an
// expired token stops reading at its expiry, not up to `ttl` later; and
// ReadService drops (Forget) the answers of a token once it learns the
// token was revoked. Failures are never kept.
//
// Thread-safety: every method may be called from any thread. Resolve blocks
// on the tracker; call it off the HTTP server's I/O threads.
#ifndef SHOAL_AGENT_READ_MODEL_RESOLVER_H_
#define SHOAL_AGENT_READ_MODEL_RESOLVER_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "read/read_error.h"
#include "shoal/file_torrent_info.h"
#include "shoal/manifest.h"
#include "shoal/tracker_endpoint.h"
#include "shoal/version_id.h"

namespace shoal {

// One version as reads see it. Immutable.
struct ResolvedModel {
  std::string ns, name;
  VersionId version;
  Manifest manifest;
  std::map<std::string, size_t> by_path;  // file path to its index in manifest.files
  // Where the version's small files move (shoal/file_torrent_info.h);
  // points into `manifest`.
  VersionBundles bundles;

  // The file at `path`, or null.
  const FileEntry* Find(const std::string& path) const;
  // The version-scoped file ID: hex SHA-256 of the version ID and the path,
  // quoted, as an ETag. A file's ETag differs between versions even if its
  // bytes do not, so a cache keyed by it never mixes versions.
  std::string ETag(const FileEntry& f) const;
  // The version's creation time, as HTTP's Last-Modified wants it.
  std::string LastModifiedHttp() const;
  // ... and as S3's listings want it: "2026-01-02T03:04:05.000Z".
  std::string LastModifiedIso() const;
};

struct Resolution {
  std::shared_ptr<const ResolvedModel> model;  // null on failure
  ReadError error;                             // when model is null
};

// Every tag of every model in a namespace: what sits above the files in
// the S3 key space ({name}/{tag}/...).
struct TagListing {
  std::vector<std::pair<std::string, std::string>> tags;  // (model name, tag), sorted
};
struct TagsResolution {
  std::shared_ptr<const TagListing> listing;  // null on failure
  ReadError error;
};

// Who a token is and which namespaces it may read, as the tracker said on
// connecting (Gateway.authenticate's identity, what whoami answers).
struct TokenScope {
  std::string subject;
  std::vector<std::string> namespaces;  // "*" means every namespace

  bool MayRead(const std::string& ns) const;
};
struct ScopeResolution {
  std::shared_ptr<const TokenScope> scope;  // null on failure
  ReadError error;
};
struct NamespacesResolution {
  std::shared_ptr<const TokenScope> scope;  // null on failure
  std::vector<std::string> namespaces;      // sorted, unique
  ReadError error;
};

class ModelResolver {
 public:
  ModelResolver(TrackerEndpoint tracker, std::chrono::milliseconds ttl);
  ModelResolver(const ModelResolver&) = delete;
  ModelResolver& operator=(const ModelResolver&) = delete;

  // The tracker's answer for `ns/name:ref` with `token`: kBadToken if the
  // tracker refuses the token, kAccessDenied if it may not read `ns`,
  // kNoSuchKey for an unknown model, tag or version, kUnavailable if the
  // tracker cannot be reached.
  Resolution Resolve(const std::string& token, const std::string& ns, const std::string& name,
                     const std::string& ref);
  // The version of `ns/name` imported from hub commit `commit` (40 hex
  // digits, ManifestSource::commit), with `token`: one Resolve has seen
  // (every resolution notes its version's commit, which never goes stale:
  // versions are immutable), else the first found among the model's newest
  // 64 versions. kNoSuchKey if none; other errors as for Resolve.
  Resolution ResolveCommit(const std::string& token, const std::string& ns, const std::string& name,
                           const std::string& commit);

  // The namespace's models and tags, with `token`; errors as for Resolve.
  // Kept for `ttl` too.
  TagsResolution ListTags(const std::string& token, const std::string& ns);

  // The token's scope; errors as for Resolve. Kept for `ttl` too.
  ScopeResolution Scope(const std::string& token);
  // The namespaces `token` may read: those its scope names, or for "*"
  // every namespace the registry holds a model in (listModels of every
  // namespace, asked each time). Errors as for Resolve.
  NamespacesResolution ReadableNamespaces(const std::string& token);

  // Drops every kept answer for a token `revoked` says is revoked.
  void Forget(const std::function<bool(const std::string& token)>& revoked);

  // The kept answer, or null; never blocks.
  std::shared_ptr<const ResolvedModel> Cached(const std::string& token, const std::string& ns,
                                              const std::string& name, const std::string& ref);

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    Clock::time_point expires;
    std::shared_ptr<const ResolvedModel> model;
  };
  // Until when an answer for a token that expires at `token_expires_at_ms`
  // (Unix ms; 0 if unknown) may be reused: now + ttl, or the expiry if sooner.
  Clock::time_point KeepUntil(int64_t token_expires_at_ms) const;
  static std::string Key(const std::string& token, const std::string& ns, const std::string& name,
                         const std::string& ref);
  static std::string CommitKey(const std::string& ns, const std::string& name,
                               const std::string& commit);

  const TrackerEndpoint tracker_;
  const std::chrono::milliseconds ttl_;
  std::mutex mu_;
  struct TagsEntry {
    Clock::time_point expires;
    std::shared_ptr<const TagListing> listing;
  };
  std::map<std::string, Entry> cache_;           // protected by mu_
  std::map<std::string, TagsEntry> tags_cache_;  // protected by mu_
  struct ScopeEntry {
    Clock::time_point expires;
    std::shared_ptr<const TokenScope> scope;
  };
  std::map<std::string, ScopeEntry> scope_cache_;  // by token; protected by mu_
  std::map<std::string, VersionId> commits_;       // "ns/name@commit"; protected by mu_
  std::set<VersionId> examined_;  // versions whose commit is in commits_ if any; protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_MODEL_RESOLVER_H_
