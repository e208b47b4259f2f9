#include "import/import_source.h"

#include <fstream>

#include "shoal/origin.h"

namespace shoal {

Result<std::vector<std::string>> ReadUrlList(const std::string& file) {
  std::ifstream in(file);
  if (!in) return Status::NotFound("cannot read URL list " + file);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    std::string_view t = TrimOws(line);
    if (t.empty() || t.front() == '#') continue;
    lines.emplace_back(t);
  }
  if (lines.empty()) return Status::InvalidArgument("URL list " + file + " names no URL");
  return lines;
}

Result<std::unique_ptr<ImportSource>> OpenImportSource(const std::string& url,
                                                       const ImportSourceOptions& options) {
  if (url.rfind("hf://", 0) == 0) return MakeHubSource(url, options);
  if (url.rfind("s3://", 0) == 0 || url.rfind("file://", 0) == 0) {
    OriginOptions o = options.s3;
    o.url = url;
    SHOAL_RETURN_IF_ERROR(o.Validate().WithContext("source " + url));
    Result<std::unique_ptr<Origin>> origin = OpenOrigin(o);
    if (!origin.ok()) return origin.status().WithContext("source " + url);
    return MakeObjectSource(url, std::move(origin).value());
  }
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0 || url.empty()) {
    std::vector<std::string> lines = options.url_list;
    if (!url.empty()) lines.insert(lines.begin(), url);
    if (lines.empty()) return Status::InvalidArgument("no source: give a URL or --from-list");
    return MakeUrlSource(std::move(lines), options);
  }
  if (url.rfind("oci://", 0) == 0) return MakeOciSource(url, options);
  return Status::InvalidArgument(
      "source '" + url.substr(0, 200) +
      "' must start with hf://, oci://, s3://, file://, http:// or https://");
}

}  // namespace shoal
