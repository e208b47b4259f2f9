// Files from plain web servers: one URL per file, named by the last part of
// its path or by the list, which may also give each file's SHA-256. A HEAD learns each file's size,
// ETag and whether it can be read in ranges; a server that refuses HEAD is read in one GET.
#include <memory>
#include <sstream>

#include "import/import_source.h"
#include "shoal/uri_encode.h"

namespace shoal {
namespace {

class UrlSource : public ImportSource {
 public:
  UrlSource(std::vector<SourceFile> files, const WebClientOptions& web)
      : files_(std::move(files)), client_(web) {}

  Result<SourceListing> List() override {
    SourceListing out;
    out.provenance.url = files_.size() == 1 ? files_[0].locator : "";
    for (const SourceFile& f : files_) {
      SourceFile file = f;
      SHOAL_RETURN_IF_ERROR(Probe(&file));
      out.files.push_back(std::move(file));
    }
    if (out.provenance.url.empty()) {
      out.provenance.url = out.files.front().locator;
      out.provenance.revision = std::to_string(out.files.size()) + " URLs";
    }
    return out;
  }

  Status Read(const SourceFile& file, uint64_t offset, uint64_t length, ByteSink& sink) override {
    WebRequest req;
    req.url = file.locator;
    req.offset = file.base + offset;
    req.length = length;
    WebResponse resp;
    SHOAL_RETURN_IF_ERROR(client_.Send(req, &sink, &resp));
    if (resp.status / 100 != 2) {
      return Status::IOError(file.locator.substr(0, 200) + " answered " +
                             std::to_string(resp.status));
    }
    return Status::OK();
  }

  std::string Describe() const override {
    return files_.size() == 1 ? files_[0].locator : std::to_string(files_.size()) + " URLs";
  }

 private:
  Status Probe(SourceFile* f) {
    WebRequest req;
    req.method = "HEAD";
    req.url = f->locator;
    WebResponse resp;
    SHOAL_RETURN_IF_ERROR(client_.Send(req, nullptr, &resp));
    if (resp.status == 404) return Status::NotFound(f->locator.substr(0, 200) + " was not found");
    if (resp.status / 100 != 2) {
      // Some servers refuse HEAD: one plain GET of unknown size, then.
      f->size_known = false;
      f->ranges = false;
      return Status::OK();
    }
    f->etag = resp.Header("etag");
    f->ranges = resp.Header("accept-ranges") == "bytes";
    const std::string length = resp.Header("content-length");
    f->size_known = !length.empty() && length.find_first_not_of("0123456789") == std::string::npos;
    f->size = f->size_known ? std::stoull(length) : 0;
    return Status::OK();
  }

  const std::vector<SourceFile> files_;
  WebClient client_;
};

// "URL [path] [sha256:HEX]": the path, else the URL's last path segment,
// decoded; with a SHA-256, the bytes are checked against it.
Result<SourceFile> FileOfLine(const std::string& line) {
  SourceFile f;
  std::istringstream words(line);
  words >> f.locator;
  Result<WebUrl> url = ParseWebUrl(f.locator);
  if (!url.ok()) return url.status();
  std::string word;
  while (words >> word) {
    if (word.rfind("sha256:", 0) == 0) {
      Result<Digest> d = Digest::ParseHex(word.substr(7));
      if (!d.ok()) {
        return Status::InvalidArgument("'" + word.substr(0, 80) +
                                       "' is not sha256: and 64 hex digits");
      }
      f.sha256 = *d;
    } else if (f.path.empty()) {
      f.path = word;
    } else {
      return Status::InvalidArgument("URL list line '" + line.substr(0, 200) +
                                     "' must be URL [path] [sha256:HEX]");
    }
  }
  if (f.path.empty()) {
    std::string path = url->target.substr(0, url->target.find('?'));
    std::optional<std::string> name = PercentDecode(path.substr(path.rfind('/') + 1), false);
    if (!name || name->empty()) {
      return Status::InvalidArgument("URL " + f.locator.substr(0, 200) +
                                     " names no file; give its path after it in the list");
    }
    f.path = *name;
  }
  return f;
}

}  // namespace

Result<std::unique_ptr<ImportSource>> MakeUrlSource(std::vector<std::string> lines,
                                                    const ImportSourceOptions& options) {
  std::vector<SourceFile> files;
  for (const std::string& line : lines) {
    Result<SourceFile> f = FileOfLine(line);
    if (!f.ok()) return f.status();
    files.push_back(std::move(f).value());
  }
  return std::unique_ptr<ImportSource>(new UrlSource(std::move(files), options.web));
}

}  // namespace shoal
