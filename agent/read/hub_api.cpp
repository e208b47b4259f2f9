#include "read/hub_api.h"

#include <openssl/evp.h>

#include <algorithm>
#include <set>

#include "read/object_address.h"
#include "shoal/base64url.h"
#include "shoal/hex.h"
#include "shoal/log.h"
#include "shoal/uri_encode.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

// The SHA-256 of zero bytes: an empty file's, known without reading it.
constexpr const char* kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::vector<std::string_view> SplitSegments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    out.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

// Segments [from, to) decoded one by one and joined with '/'.
Result<std::string> JoinDecoded(const std::vector<std::string_view>& segments, size_t from,
                                size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    auto decoded = PercentDecode(segments[i], /*plus_is_space=*/false);
    if (!decoded) return Status::InvalidArgument("malformed %-escape in the request path");
    if (i > from) out += '/';
    out += *decoded;
  }
  return out;
}

std::string Quoted(std::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

std::string Sha1Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha1(), nullptr);
  return hex::Encode(md, len);
}

// A Git LFS pointer file for content of this SHA-256 and size.
std::string LfsPointer(const std::string& sha256, uint64_t size) {
  return "version https://git-lfs.github.com/spec/v1\noid sha256:" + sha256 + "\nsize " +
         std::to_string(size) + "\n";
}

std::string GitBlobId(std::string_view content) {
  return Sha1Hex("blob " + std::to_string(content.size()) + std::string(1, '\0') +
                 std::string(content));
}

std::string LfsJson(const HubFileId& id, uint64_t size, const char* hash_key) {
  return std::string(",\"lfs\":{\"") + hash_key + "\":\"" + id.sha256 +
         "\",\"size\":" + std::to_string(size) +
         ",\"pointerSize\":" + std::to_string(LfsPointer(id.sha256, size).size()) + "}";
}

}  // namespace

std::string HubFolderEntryJson(const std::string& path) {
  return "{\"type\":\"directory\",\"oid\":\"" + Sha1Hex("tree " + path) +
         "\",\"size\":0,\"path\":" + Quoted(path) + "}";
}

std::string HubFileEntryJson(const FileEntry& f) {
  HubFileId id = HubFileIdOf(f);
  std::string out = "{\"type\":\"file\",\"oid\":\"" + id.oid +
                    "\",\"size\":" + std::to_string(f.size) + ",\"path\":" + Quoted(f.path);
  if (id.lfs) out += LfsJson(id, f.size, "oid");
  return out + "}";
}

Result<HubRequest> ParseHubTarget(std::string_view raw_path) {
  HubRequest r;
  if (raw_path.empty() || raw_path.front() != '/') return r;
  std::vector<std::string_view> seg = SplitSegments(raw_path.substr(1));
  // Decodes segments [from, to) into *out.
  auto take = [&](size_t from, size_t to, std::string* out) -> Status {
    Result<std::string> r = JoinDecoded(seg, from, to);
    if (!r.ok()) return r.status();
    *out = std::move(r).value();
    return Status::OK();
  };
  if (seg.size() >= 4 && seg[0] == "api" && seg[1] == "models") {
    SHOAL_RETURN_IF_ERROR(take(2, 3, &r.org));
    SHOAL_RETURN_IF_ERROR(take(3, 4, &r.name));
    if (seg.size() == 4) {
      r.kind = HubRequest::Kind::kModel;
      r.revision = "main";
    } else if (seg[4] == "revision" && seg.size() >= 6) {
      r.kind = HubRequest::Kind::kModel;
      SHOAL_RETURN_IF_ERROR(take(5, seg.size(), &r.revision));
    } else if (seg[4] == "paths-info" && seg.size() >= 6) {
      r.kind = HubRequest::Kind::kPathsInfo;
      SHOAL_RETURN_IF_ERROR(take(5, seg.size(), &r.revision));
    } else if (seg[4] == "tree" && seg.size() >= 6) {
      r.kind = HubRequest::Kind::kTree;
      SHOAL_RETURN_IF_ERROR(take(5, 6, &r.revision));
      SHOAL_RETURN_IF_ERROR(take(6, seg.size(), &r.path));
      while (!r.path.empty() && r.path.back() == '/') r.path.pop_back();
      if (!r.path.empty()) SHOAL_RETURN_IF_ERROR(ValidateRelativePath(r.path));
    }
  } else if (seg.size() >= 5 && seg[2] == "resolve" && seg[0] != "api") {
    r.kind = HubRequest::Kind::kResolve;
    SHOAL_RETURN_IF_ERROR(take(0, 1, &r.org));
    SHOAL_RETURN_IF_ERROR(take(1, 2, &r.name));
    SHOAL_RETURN_IF_ERROR(take(3, 4, &r.revision));
    SHOAL_RETURN_IF_ERROR(take(4, seg.size(), &r.path));
    SHOAL_RETURN_IF_ERROR(ValidateRelativePath(r.path));
  }
  if (r.revision.empty() && r.kind != HubRequest::Kind::kUnknown) {
    return Status::InvalidArgument("the request names an empty revision");
  }
  return r;
}

Result<std::string> RefOfRevision(const std::string& revision) {
  if (revision == "main" || revision == "HEAD") return std::string("latest");
  if (!ValidateRef(revision).ok()) {
    return Status::InvalidArgument("revision '" + revision.substr(0, 130) +
                                   "' is not a tag, version or commit of this hub");
  }
  return revision;
}

std::string NamespaceOfOrg(const std::map<std::string, std::string>& orgs, const std::string& org) {
  auto it = orgs.find(org);
  return it == orgs.end() ? org : it->second;
}

bool HubFlagTrue(std::string_view v) { return v == "true" || v == "True" || v == "1"; }

bool IsCommitSha(std::string_view s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string HubCommit(const Manifest& manifest, const VersionId& version) {
  if (IsCommitSha(manifest.source.commit)) return manifest.source.commit;
  return version.ToHex().substr(0, 40);
}

HubFileId HubFileIdOf(const FileEntry& file) {
  HubFileId id;
  if (IsCommitSha(file.source_etag)) {
    id.oid = file.source_etag;  // a file a hub kept in Git: its blob ID, as there
  } else if (file.sha256 || file.size == 0) {
    id.lfs = true;
    id.sha256 = file.sha256 ? file.sha256->ToHex() : kEmptySha256;
    id.oid = GitBlobId(LfsPointer(id.sha256, file.size));
  } else {
    id.oid = file.pieces_root.ToHex().substr(0, 40);
  }
  return id;
}

std::string HubModelJson(const std::string& repo, const Manifest& m, const VersionId& version,
                         bool blobs) {
  const std::string sha = HubCommit(m, version);
  const std::string when = FormatUtcMillis(m.created_at_ms);
  std::string out = "{\"_id\":" + Quoted(version.ToHex()) + ",\"id\":" + Quoted(repo) +
                    ",\"modelId\":" + Quoted(repo) + ",\"author\":" + Quoted(m.ns) + ",\"sha\":\"" +
                    sha + "\",\"lastModified\":\"" + when + "\",\"createdAt\":\"" + when +
                    "\",\"private\":false,\"disabled\":false,\"gated\":false,\"downloads\":0,"
                    "\"likes\":0,\"tags\":[";
  for (size_t i = 0; i < m.labels.size(); ++i) {
    out += (i ? "," : "") + Quoted(m.labels[i].key + ":" + m.labels[i].value);
  }
  out += "],\"usedStorage\":" + std::to_string(m.TotalBytes()) + ",\"siblings\":[";
  for (size_t i = 0; i < m.files.size(); ++i) {
    const FileEntry& f = m.files[i];
    out += (i ? ",{\"rfilename\":" : "{\"rfilename\":") + Quoted(f.path);
    if (blobs) {
      HubFileId id = HubFileIdOf(f);
      out += ",\"blobId\":\"" + id.oid + "\",\"size\":" + std::to_string(f.size);
      if (id.lfs) out += LfsJson(id, f.size, "sha256");
    }
    out += "}";
  }
  return out + "]}";
}

Result<HubTreePage> HubTree(const Manifest& m, const std::string& folder, bool recursive,
                            const std::string& cursor, size_t limit) {
  const std::string prefix = folder.empty() ? "" : folder + "/";
  // Every entry under the folder: files, and the folders above them.
  struct Entry {
    const FileEntry* file = nullptr;  // null: a folder
  };
  std::map<std::string, Entry> entries;
  bool found = folder.empty();
  auto add_folders = [&](const std::string& rel) {
    // Folders between `prefix` and `rel`'s last component.
    for (size_t slash = rel.find('/'); slash != std::string::npos;
         slash = rel.find('/', slash + 1)) {
      entries.emplace(prefix + rel.substr(0, slash), Entry{});
      if (!recursive) return;
    }
  };
  for (const FileEntry& f : m.files) {
    if (f.path.compare(0, prefix.size(), prefix) != 0) continue;
    found = true;
    const std::string rel = f.path.substr(prefix.size());
    add_folders(rel);
    if (recursive || rel.find('/') == std::string::npos) entries.emplace(f.path, Entry{&f});
  }
  for (const std::string& dir : m.empty_dirs) {
    if (dir == folder) found = true;
    if (dir.compare(0, prefix.size(), prefix) != 0 || dir.size() == prefix.size()) continue;
    found = true;
    const std::string rel = dir.substr(prefix.size());
    add_folders(rel);
    if (recursive || rel.find('/') == std::string::npos) entries.emplace(dir, Entry{});
  }
  if (!found) return Status::NotFound("no folder '" + folder + "'");
  auto it = entries.begin();
  if (!cursor.empty()) {
    std::optional<std::string> after = base64url::Decode(cursor);
    if (!after) return Status::InvalidArgument("malformed cursor");
    it = entries.upper_bound(*after);
  }
  HubTreePage page;
  page.json = "[";
  for (; it != entries.end() && page.entries < limit; ++it, ++page.entries) {
    if (page.entries) page.json += ",";
    const std::string& path = it->first;
    page.json +=
        it->second.file == nullptr ? HubFolderEntryJson(path) : HubFileEntryJson(*it->second.file);
  }
  page.json += "]";
  if (it != entries.end()) page.cursor = base64url::Encode(std::prev(it)->first);
  return page;
}

}  // namespace shoal
