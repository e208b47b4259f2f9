// HubApi: the pure parts of the agent's Hugging Face–style hub face
// (ReadService::ServeHub), which lets the hub's clients read Shoal versions
// by setting HF_ENDPOINT to the agent's --hub-listen address:
//
//   GET      /api/models/{org}/{name}[/revision/{rev}][?blobs=true]
//   GET      /api/models/{org}/{name}/tree/{rev}[/{path}][?recursive=true]
//   GET/HEAD /{org}/{name}/resolve/{rev}/{path}
//   POST     /api/models/{org}/{name}/paths-info/{rev}
//
// A repository "org/name" is model `name` of namespace `org` (or of the
// namespace --hub-namespace maps `org` to). The token is a Shoal read
// token, sent as the hub's Bearer token; clients that insist on the hub's
// "hf_" prefix may send "hf_shoal1....", read as "shoal1....". A revision is a tag ("main"
// means "latest"), a version ID or a prefix of it, or the commit an
// imported version came from. Each version has one commit sha, 40 hex
// digits: the hub commit it was imported from, else the first 40 hex
// digits of its version ID. The same version always answers with the same
// commit and the same ETags, so the clients' caches and offline mode work.
//
// A file's hub identity: a file imported from a hub that kept it in Git is
// a Git file again, with the hub's blob ID as oid and ETag. Any other file
// whose SHA-256 Shoal knows (the rest of every import; an empty file) is an
// LFS file, whose ETag is that SHA-256, as on the hub, and whose oid is the
// blob ID of its LFS pointer. The rest are Git files whose oid and ETag
// stand in for a blob ID: the first 40 hex digits of the file's BEP 52
// pieces root. All depend on the bytes only, so a client keeps one copy of
// a file that versions share, and an import answers as its hub did.
//
// Thread-safety: plain functions and values.
#ifndef SHOAL_AGENT_READ_HUB_API_H_
#define SHOAL_AGENT_READ_HUB_API_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/manifest.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

// What POST /api/models/{repo}/paths-info/{rev} asks about: the
// JavaScript client's JSON body ({"paths": [...], "expand": true}) or the
// Python client's form (paths=a&paths=b&expand=True).
struct HubPathsQuery {
  std::vector<std::string> paths;  // relative, without a trailing '/'
  bool expand = false;
};

struct HubRequest {
  enum class Kind {
    kModel,      // /api/models/{repo}[/revision/{rev}]
    kTree,       // /api/models/{repo}/tree/{rev}[/{path}]
    kResolve,    // /{repo}/resolve/{rev}/{path}
    kPathsInfo,  // /api/models/{repo}/paths-info/{rev}, a POST
    kUnknown,    // any other path: the hub's other APIs (commits, discussions, spaces...)
  };
  Kind kind = Kind::kUnknown;
  std::string org, name;  // the repository, as asked
  std::string revision;   // percent-decoded; "main" when the path gives none
  std::string path;       // kTree: the folder ("" for the top); kResolve: the file
  HubPathsQuery paths;    // kPathsInfo: from the body (ParseHubPathsBody)
};

// The request a raw target path (as sent, without the query) names. Each
// segment is percent-decoded on its own, so "refs%2Fpr%2F1" stays one
// revision. InvalidArgument for a malformed %-escape or a file path with
// '..', an empty or absolute component; a path the hub face does not serve
// is kUnknown, not an error.
Result<HubRequest> ParseHubTarget(std::string_view raw_path);

// The tag or version a revision names: "main" (and "HEAD", which some
// clients send for the default branch) is "latest"; others are
// themselves. InvalidArgument (answered RevisionNotFound) for a revision
// that cannot be a Shoal ref, such as "refs/pr/1".
Result<std::string> RefOfRevision(const std::string& revision);

// The namespace for hub organisation `org`: its entry in `orgs` if any,
// else `org` itself.
std::string NamespaceOfOrg(const std::map<std::string, std::string>& orgs, const std::string& org);

// A hub flag's value that means yes, in a query or a form: "true", "True"
// (Python's str(True)) or "1".
bool HubFlagTrue(std::string_view value);

// True for 40 lowercase hex digits: what a commit sha looks like.
bool IsCommitSha(std::string_view s);

// The version's commit sha, as described above.
std::string HubCommit(const Manifest& manifest, const VersionId& version);

// A file's identity on the hub face.
struct HubFileId {
  bool lfs = false;
  std::string sha256;  // hex, when lfs
  std::string oid;     // the Git blob ID or its stand-in: 40 hex digits
  // What ETag and X-Linked-Etag carry, quoted: the SHA-256 for LFS files,
  // else the oid.
  std::string ETag() const { return "\"" + (lfs ? sha256 : oid) + "\""; }
};
HubFileId HubFileIdOf(const FileEntry& file);

// GET /api/models/{repo}[/revision/{rev}]: id, sha, siblings and the
// fields clients read; with `blobs`, each sibling's size, blob ID and LFS
// pointer.
std::string HubModelJson(const std::string& repo, const Manifest& manifest,
                         const VersionId& version, bool blobs);

// One entry of a tree or paths-info answer: a folder, or a file (its
// hub identity, size and LFS pointer).
std::string HubFolderEntryJson(const std::string& path);
std::string HubFileEntryJson(const FileEntry& file);

// One page of GET /api/models/{repo}/tree/{rev}/{folder}: the entries
// (files and folders) under `folder`, all of them with `recursive`, else
// its direct children, sorted by path, at most `limit` after the cursor.
struct HubTreePage {
  std::string json;    // a JSON array
  std::string cursor;  // for the next page; "" on the last
  size_t entries = 0;
};
// NotFound if `folder` is neither "" nor a folder of the version;
// InvalidArgument for a malformed cursor.
Result<HubTreePage> HubTree(const Manifest& manifest, const std::string& folder, bool recursive,
                            const std::string& cursor, size_t limit);

// The most paths one call may ask about.
constexpr size_t kHubMaxPaths = 10000;
// InvalidArgument for a body that is neither form, a path with '..' or an
// absolute or empty component, or more than kHubMaxPaths paths.
Result<HubPathsQuery> ParseHubPathsBody(std::string_view content_type, const std::string& body);

// The paths-info answer: a JSON array with an entry, worded as the tree
// call's, for each asked path that is a file or folder of the version, in
// the order asked and once each; other paths are left out, as the hub does.
// With `expand`, each entry also names `commit` as its last commit (dated
// when the version was made) and its security scan as not done.
std::string HubPathsInfo(const Manifest& manifest, const HubPathsQuery& query,
                         const std::string& commit);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_HUB_API_H_
