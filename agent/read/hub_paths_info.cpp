// The hub face's paths-info call: which of a few paths a version holds,
// as the hub's clients ask before downloading (read/hub_api.h).
#include <map>
#include <set>

#include "proto/json_decode.h"
#include "read/hub_api.h"
#include "shoal/proto/hub.capnp.h"
#include "shoal/uri_encode.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

// paths=a&paths=b&expand=True, as Python's requests encodes a form.
Result<HubPathsQuery> ParseForm(std::string_view body) {
  HubPathsQuery q;
  size_t at = 0;
  while (at < body.size()) {
    size_t amp = body.find('&', at);
    if (amp == std::string_view::npos) amp = body.size();
    std::string_view pair = body.substr(at, amp - at);
    at = amp + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    auto key = PercentDecode(pair.substr(0, eq), /*plus_is_space=*/true);
    auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!key || !value) return Status::InvalidArgument("malformed %-escape in the form");
    if (*key == "paths") q.paths.push_back(std::move(*value));
    if (*key == "expand") q.expand = HubFlagTrue(*value);
  }
  return q;
}

Result<HubPathsQuery> ParseJson(const std::string& body) {
  namespace ph = proto::hub;
  HubPathsQuery q;
  Status s = DecodeJson<ph::PathsInfoRequest>(body, "the paths-info body",
                                              [&](ph::PathsInfoRequest::Reader r) {
                                                for (capnp::Text::Reader p : r.getPaths())
                                                  q.paths.push_back(Str(p));
                                                q.expand = r.getExpand();
                                                return Status::OK();
                                              });
  if (!s.ok()) return Status::InvalidArgument(s.message());
  return q;
}

// The entry's last commit and scan status, as the hub words them.
std::string Expanded(const std::string& commit, const std::string& when) {
  return ",\"lastCommit\":{\"id\":\"" + commit + "\",\"title\":\"Shoal version " +
         commit.substr(0, 12) + "\",\"date\":\"" + when +
         "\"},\"securityFileStatus\":{\"status\":\"unscanned\"}}";
}

}  // namespace

Result<HubPathsQuery> ParseHubPathsBody(std::string_view content_type, const std::string& body) {
  const bool json = content_type.rfind("application/json", 0) == 0;
  Result<HubPathsQuery> q = json ? ParseJson(body) : ParseForm(body);
  if (!q.ok()) return q;
  if (q->paths.size() > kHubMaxPaths) {
    return Status::InvalidArgument("a paths-info call asks about at most " +
                                   std::to_string(kHubMaxPaths) + " paths, not " +
                                   std::to_string(q->paths.size()));
  }
  for (std::string& p : q->paths) {
    while (!p.empty() && p.back() == '/') p.pop_back();
    if (!p.empty()) SHOAL_RETURN_IF_ERROR(ValidateRelativePath(p));
  }
  return q;
}

std::string HubPathsInfo(const Manifest& m, const HubPathsQuery& query, const std::string& commit) {
  std::map<std::string_view, const FileEntry*> files;
  std::set<std::string> folders(m.empty_dirs.begin(), m.empty_dirs.end());
  for (const FileEntry& f : m.files) {
    files.emplace(f.path, &f);
    for (size_t slash = f.path.find('/'); slash != std::string::npos;
         slash = f.path.find('/', slash + 1)) {
      folders.insert(f.path.substr(0, slash));
    }
  }
  const std::string when = FormatUtcMillis(m.created_at_ms);
  std::set<std::string_view> answered;
  std::string out = "[";
  for (const std::string& p : query.paths) {
    if (p.empty() || !answered.insert(p).second) continue;
    std::string entry;
    if (auto f = files.find(p); f != files.end()) {
      entry = HubFileEntryJson(*f->second);
    } else if (folders.count(p) != 0) {
      entry = HubFolderEntryJson(p);
    } else {
      continue;  // neither: left out
    }
    if (query.expand) entry.replace(entry.size() - 1, 1, Expanded(commit, when));
    if (out.size() > 1) out += ",";
    out += entry;
  }
  return out + "]";
}

}  // namespace shoal
