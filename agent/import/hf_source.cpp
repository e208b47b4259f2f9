// Files from a Hugging Face–style hub, through its public HTTP API:
//   GET /api/models/{repo}/revision/{rev}?blobs=true   the commit, and siblings
//   GET /api/models/{repo}/tree/{commit}?recursive=true  files, sizes, LFS SHA-256,
//                                                       paged by Link: rel="next"
//   GET /{repo}/resolve/{commit}/{path}                 the bytes, often redirected
// Files are read at the resolved commit, so a branch that moves during the
// import cannot mix two revisions. The token goes to the hub only: the web
// client drops it when a download is redirected to another host.
#include <algorithm>
#include <memory>

#include "import/import_source.h"
#include "proto/json_decode.h"
#include "shoal/proto/hub.capnp.h"
#include "shoal/uri_encode.h"

namespace shoal {
namespace {

namespace ph = shoal::proto::hub;

// Tree pages followed before giving up: 1000 entries a page on the hub.
constexpr int kMaxTreePages = 1000;

// The URL of `rel="next"` in a Link header, or "".
std::string NextLink(const std::string& link) {
  size_t at = 0;
  while ((at = link.find('<', at)) != std::string::npos) {
    size_t close = link.find('>', at);
    if (close == std::string::npos) return "";
    size_t end = link.find(',', close);
    std::string params = link.substr(close + 1, end == std::string::npos ? end : end - close - 1);
    if (params.find("rel=\"next\"") != std::string::npos ||
        params.find("rel=next") != std::string::npos) {
      return link.substr(at + 1, close - at - 1);
    }
    at = close;
  }
  return "";
}

Result<Digest> ParseSha256(const std::string& hex, const std::string& path) {
  Result<Digest> d = Digest::ParseHex(hex);
  if (!d.ok()) {
    return Status::Corruption("the hub gives file '" + path.substr(0, 120) +
                              "' an LFS SHA-256 that is not 64 hex digits");
  }
  return d;
}

class HubSource : public ImportSource {
 public:
  HubSource(std::string repo, std::string revision, const ImportSourceOptions& options)
      : repo_(std::move(repo)),
        revision_(std::move(revision)),
        endpoint_(options.hf_endpoint),
        client_(options.web) {
    while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
    if (!options.hf_token.empty()) auth_.Set("authorization", "Bearer " + options.hf_token);
  }

  Result<SourceListing> List() override {
    SourceListing out;
    out.provenance.url = "hf://" + repo_;
    out.provenance.revision = revision_;
    std::vector<SourceFile> siblings;
    SHOAL_RETURN_IF_ERROR(ReadRevision(&out.provenance.commit, &siblings));
    commit_ = out.provenance.commit;
    Result<std::vector<SourceFile>> tree = ReadTree();
    if (tree.ok()) {
      out.files = std::move(tree).value();
    } else if (tree.status().IsNotFound() && !siblings.empty()) {
      out.files = std::move(siblings);  // a hub without the tree API
    } else {
      return tree.status();
    }
    return out;
  }

  Status Read(const SourceFile& file, uint64_t offset, uint64_t length, ByteSink& sink) override {
    WebRequest req;
    req.url = file.locator;
    req.headers = auth_;
    req.offset = file.base + offset;
    req.length = length;
    WebResponse resp;
    SHOAL_RETURN_IF_ERROR(client_.Send(req, &sink, &resp));
    if (resp.status / 100 != 2) return HubError(resp, "file '" + file.path + "'");
    return Status::OK();
  }

  std::string Describe() const override { return "hf://" + repo_ + "@" + revision_; }

 private:
  std::string ApiBase() const { return endpoint_ + "/api/models/" + repo_; }

  // The hub's answer as one line: its X-Error-Message where it gives one.
  Status HubError(const WebResponse& r, const std::string& what) const {
    const std::string code = r.Header("x-error-code");
    std::string msg = r.Header("x-error-message");
    if (msg.empty()) msg = "HTTP " + std::to_string(r.status);
    const std::string where = "hf://" + repo_ + "@" + revision_ + ": " + what + ": ";
    if (!code.empty() && msg.find(code) == std::string::npos) msg = code + ": " + msg;
    if (r.status == 401 || r.status == 403 || code == "GatedRepo") {
      return Status::PermissionDenied(
          where + msg +
          (auth_.size() == 0 ? " (pass --hf-token or set HF_TOKEN)" : " (the token is refused)"));
    }
    if (r.status == 404) return Status::NotFound(where + msg);
    return Status::IOError(where + msg);
  }

  // A GET of the hub's API with the token; a non-2xx answer is HubError.
  Status GetApi(const std::string& url, const std::string& what, WebResponse* resp) {
    WebRequest req;
    req.url = url;
    req.headers = auth_;
    SHOAL_RETURN_IF_ERROR(client_.Send(req, nullptr, resp));
    return resp->status / 100 == 2 ? Status::OK() : HubError(*resp, what);
  }

  Status ReadRevision(std::string* commit, std::vector<SourceFile>* siblings) {
    WebResponse resp;
    SHOAL_RETURN_IF_ERROR(GetApi(
        ApiBase() + "/revision/" + UriEncodeQuery(revision_) + "?blobs=true", "revision", &resp));
    return DecodeJson<ph::ModelInfo>(
        resp.body, "the revision answer", [&](ph::ModelInfo::Reader m) {
          *commit = Str(m.getSha());
          if (commit->empty())
            return Status::Corruption("the hub gives no commit sha for " + repo_);
          for (auto s : m.getSiblings()) {
            SourceFile f;
            f.path = Str(s.getRfilename());
            f.size = s.getSize();
            f.size_known = s.getSize() > 0 || s.hasBlobId();
            f.etag = Str(s.getBlobId());
            if (s.hasLfs() && s.getLfs().hasSha256()) {
              Result<Digest> d = ParseSha256(Str(s.getLfs().getSha256()), f.path);
              if (!d.ok()) return d.status();
              f.sha256 = *d;
              f.etag = d->ToHex();
            }
            f.locator = ResolveUrl(f.path, *commit);
            siblings->push_back(std::move(f));
          }
          return Status::OK();
        });
  }

  std::string ResolveUrl(const std::string& path, const std::string& commit) const {
    return endpoint_ + "/" + repo_ + "/resolve/" + commit + "/" + UriEncodePath(path);
  }

  Result<std::vector<SourceFile>> ReadTree() {
    std::vector<SourceFile> files;
    std::string url = ApiBase() + "/tree/" + commit_ + "?recursive=true";
    for (int page = 0; !url.empty(); ++page) {
      if (page == kMaxTreePages) {
        return Status::IOError("hf://" + repo_ + ": the tree has more than " +
                               std::to_string(kMaxTreePages) + " pages");
      }
      WebResponse resp;
      SHOAL_RETURN_IF_ERROR(GetApi(url, "tree", &resp));
      SHOAL_RETURN_IF_ERROR(
          DecodeJson<ph::TreePage>("{\"entries\":" + resp.body + "}", "the tree answer",
                                   [&](ph::TreePage::Reader t) { return AddEntries(t, &files); }));
      std::string next = NextLink(resp.Header("link"));
      if (!next.empty() && next.front() == '/') next = endpoint_ + next;
      url = next;
    }
    return files;
  }

  Status AddEntries(ph::TreePage::Reader t, std::vector<SourceFile>* files) const {
    for (auto e : t.getEntries()) {
      if (Str(e.getKind()) != "file") continue;
      SourceFile f;
      f.path = Str(e.getPath());
      f.size = e.getSize();
      f.etag = Str(e.getOid());
      if (e.hasLfs() && e.getLfs().hasOid()) {
        Result<Digest> d = ParseSha256(Str(e.getLfs().getOid()), f.path);
        if (!d.ok()) return d.status();
        f.sha256 = *d;
        f.etag = d->ToHex();
      }
      f.locator = ResolveUrl(f.path, commit_);
      files->push_back(std::move(f));
    }
    return Status::OK();
  }

  const std::string repo_, revision_;
  std::string endpoint_;
  HttpHeaders auth_;
  WebClient client_;
  std::string commit_;  // set by List
};

}  // namespace

Result<std::unique_ptr<ImportSource>> MakeHubSource(const std::string& url,
                                                    const ImportSourceOptions& options) {
  std::string rest = url.substr(5);  // after hf://
  std::string revision = "main";
  if (size_t at = rest.find('@'); at != std::string::npos) {
    revision = rest.substr(at + 1);
    rest.resize(at);
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t slashes = static_cast<size_t>(std::count(rest.begin(), rest.end(), '/'));
  if (rest.empty() || revision.empty() || slashes > 1 || rest.front() == '/' ||
      rest.find("..") != std::string::npos) {
    return Status::InvalidArgument("'" + url.substr(0, 200) +
                                   "' must be hf://org/repo or hf://org/repo@revision");
  }
  if (options.hf_endpoint.rfind("http://", 0) != 0 &&
      options.hf_endpoint.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("--hf-endpoint '" + options.hf_endpoint +
                                   "' must start with http:// or https://");
  }
  return std::unique_ptr<ImportSource>(new HubSource(rest, revision, options));
}

}  // namespace shoal
