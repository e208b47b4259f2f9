#include "cli/version_json.h"

#include "shoal/log.h"

namespace shoal {
namespace {

std::string Quoted(const std::string& s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

std::string Array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const std::string& s : items) out += (out.size() > 1 ? "," : "") + Quoted(s);
  return out + "]";
}

}  // namespace

std::string CommittedJson::ToString() const {
  const Manifest& m = *manifest;
  const std::string id = version->id.ToHex();
  std::vector<std::string> labels;
  for (const Label& l : m.labels) labels.push_back(l.key + "=" + l.value);
  std::string out = "{\"ref\":" + Quoted(m.ns + "/" + m.name + ":" + id) + ",\"version\":\"" + id +
                    "\",\"created\":" + (version->created ? "true" : "false") +
                    ",\"state\":" + Quoted(VersionStateName(version->state)) +
                    ",\"tags\":" + Array(tags) + ",\"labels\":" + Array(labels) +
                    ",\"files\":" + std::to_string(m.files.size()) +
                    ",\"total_bytes\":" + std::to_string(m.TotalBytes()) +
                    ",\"uploaded_chunks\":" + std::to_string(uploaded_chunks) +
                    ",\"uploaded_bytes\":" + std::to_string(uploaded_bytes);
  if (read_bytes >= 0) out += ",\"read_bytes\":" + std::to_string(read_bytes);
  if (!m.source.empty()) {
    out += ",\"source\":{\"url\":" + Quoted(m.source.url) +
           ",\"revision\":" + Quoted(m.source.revision) + ",\"commit\":" + Quoted(m.source.commit) +
           "}";
  }
  return out + "}\n";
}

}  // namespace shoal
