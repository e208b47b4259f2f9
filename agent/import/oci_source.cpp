// Files from an OCI distribution registry holding a CNCF ModelPack artifact
// (oci://registry/repo:tag or @sha256:…):
//   GET /v2/{repo}/manifests/{ref}   the image manifest: artifactType
//                                    application/vnd.cncf.model.manifest.v1+json
//                                    (or the older vnd.cnai.model names)
//   GET /v2/{repo}/blobs/{digest}    each layer, often redirected to storage
// A `.raw` layer is one file, named by its org.cncf.model.filepath
// annotation; its digest is the file's SHA-256 and is checked. A `.tar`
// layer holds files in a tar archive; its members are read in place, by
// range, so the archive is never unpacked to disk. Authentication follows
// the registry's 401: Basic with the given credentials, or a Bearer token
// from the realm its WWW-Authenticate names.
#include <openssl/evp.h>

#include <memory>
#include <mutex>

#include "import/import_source.h"
#include "proto/json_decode.h"
#include "shoal/proto/oci.capnp.h"
#include "shoal/sha256.h"
#include "shoal/uri_encode.h"

namespace shoal {
namespace {

namespace po = shoal::proto::oci;

constexpr char kManifestType[] = "application/vnd.oci.image.manifest.v1+json";
constexpr size_t kTarBlock = 512;
// Members read from one tar layer before giving up: a guard against a
// layer of millions of tiny entries.
constexpr int kMaxTarMembers = 100000;

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool EndsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
bool IsModelType(const std::string& t) {
  return StartsWith(t, "application/vnd.cncf.model.") ||
         StartsWith(t, "application/vnd.cnai.model.");
}

std::string Base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// The value of `key` in a WWW-Authenticate challenge's parameters.
std::string ChallengeParam(const std::string& challenge, const std::string& key) {
  const std::string needle = key + "=\"";
  size_t at = challenge.find(needle);
  if (at == std::string::npos) return "";
  at += needle.size();
  size_t end = challenge.find('"', at);
  return end == std::string::npos ? "" : challenge.substr(at, end - at);
}

// A tar header's octal (or base-256) number field.
uint64_t TarNumber(const char* p, size_t n) {
  if (static_cast<unsigned char>(p[0]) & 0x80) {  // GNU base-256
    uint64_t v = 0;
    for (size_t i = 1; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n && p[i] >= '0' && p[i] <= '7'; ++i) v = v * 8 + (p[i] - '0');
  return v;
}

std::string TarString(const char* p, size_t n) {
  size_t len = 0;
  while (len < n && p[len] != '\0') ++len;
  return std::string(p, len);
}

// The "path" record of a pax extended header, or "".
std::string PaxPath(const std::string& records) {
  size_t at = 0;
  while (at < records.size()) {
    size_t space = records.find(' ', at);
    if (space == std::string::npos) break;
    size_t len = std::stoul(records.substr(at, space - at));
    if (len == 0 || at + len > records.size()) break;
    std::string kv = records.substr(space + 1, len - (space - at) - 2);  // minus the '\n'
    if (kv.rfind("path=", 0) == 0) return kv.substr(5);
    at += len;
  }
  return "";
}

class OciSource : public ImportSource {
 public:
  OciSource(std::string url, std::string base, std::string repo, std::string ref,
            const ImportSourceOptions& o)
      : url_(std::move(url)),
        base_(std::move(base)),
        repo_(std::move(repo)),
        ref_(std::move(ref)),
        username_(o.oci_username),
        password_(o.oci_password),
        client_(o.web) {}

  Result<SourceListing> List() override {
    WebResponse resp;
    HttpHeaders accept;
    accept.Set("accept", kManifestType);
    SHOAL_RETURN_IF_ERROR(
        Get(base_ + "/v2/" + repo_ + "/manifests/" + ref_, accept, nullptr, 0, UINT64_MAX, &resp));
    if (resp.status != 200) return Error(resp, "manifest " + ref_);
    const std::string digest = "sha256:" + Sha256::Of(resp.body.data(), resp.body.size()).ToHex();
    if (StartsWith(ref_, "sha256:") && ref_ != digest) {
      return Status::Corruption(Describe() + ": the manifest's bytes hash to " + digest);
    }
    SourceListing out;
    out.provenance = {"oci://" + base_.substr(base_.find("://") + 3) + "/" + repo_, ref_, digest};
    SHOAL_RETURN_IF_ERROR(DecodeJson<po::ImageManifest>(
        resp.body, Describe() + ": the manifest",
        [&](po::ImageManifest::Reader m) { return AddLayers(m, &out.files); }));
    return out;
  }

  Status Read(const SourceFile& file, uint64_t offset, uint64_t length, ByteSink& sink) override {
    WebResponse resp;
    SHOAL_RETURN_IF_ERROR(Get(file.locator, {}, &sink, file.base + offset, length, &resp));
    if (resp.status / 100 != 2) return Error(resp, "blob of '" + file.path + "'");
    return Status::OK();
  }

  std::string Describe() const override { return url_; }

 private:
  Status Error(const WebResponse& r, const std::string& what) const {
    const std::string where = Describe() + ": " + what + ": HTTP " + std::to_string(r.status);
    if (r.status == 401 || r.status == 403) {
      return Status::PermissionDenied(where + (username_.empty()
                                                   ? " (pass --oci-username and --oci-password)"
                                                   : " (the credentials are refused)"));
    }
    if (r.status == 404) return Status::NotFound(where + " (not in the registry)");
    return Status::IOError(where);
  }

  // A GET with the registry's credentials, answering its 401 once.
  Status Get(const std::string& url, HttpHeaders headers, ByteSink* sink, uint64_t offset,
             uint64_t length, WebResponse* resp) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      WebRequest req;
      req.url = url;
      req.headers = headers;
      req.offset = offset;
      req.length = length;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!authorization_.empty()) req.headers.Set("authorization", authorization_);
      }
      SHOAL_RETURN_IF_ERROR(client_.Send(req, sink, resp));
      if (resp->status != 401 || attempt > 0) return Status::OK();
      SHOAL_RETURN_IF_ERROR(Authenticate(resp->Header("www-authenticate")));
    }
    return Status::OK();
  }

  // Answers a 401's challenge: Basic with the credentials, or a Bearer
  // token fetched from the challenge's realm.
  Status Authenticate(const std::string& challenge) {
    const std::string basic =
        username_.empty() ? "" : "Basic " + Base64(username_ + ":" + password_);
    if (StartsWith(challenge, "Basic") || StartsWith(challenge, "basic")) {
      std::lock_guard<std::mutex> lock(mu_);
      authorization_ = basic;
      return Status::OK();
    }
    const std::string realm = ChallengeParam(challenge, "realm");
    if (!StartsWith(challenge, "Bearer") || realm.empty()) return Status::OK();
    std::string token_url = realm + (realm.find('?') == std::string::npos ? "?" : "&");
    token_url += "service=" + UriEncodeQuery(ChallengeParam(challenge, "service"));
    const std::string scope = ChallengeParam(challenge, "scope");
    token_url +=
        "&scope=" + UriEncodeQuery(scope.empty() ? "repository:" + repo_ + ":pull" : scope);
    HttpHeaders h;
    if (!basic.empty()) h.Set("authorization", basic);
    Result<std::string> body = GetText(client_, token_url, h, Describe() + ": token");
    if (!body.ok()) return body.status();
    return DecodeJson<po::TokenAnswer>(
        *body, Describe() + ": the token answer", [&](po::TokenAnswer::Reader t) {
          std::string token = Str(t.getToken());
          if (token.empty()) token = Str(t.getAccessToken());
          if (token.empty()) {
            return Status::PermissionDenied(Describe() + ": the registry gave no token");
          }
          std::lock_guard<std::mutex> lock(mu_);
          authorization_ = "Bearer " + token;
          return Status::OK();
        });
  }

  Status AddLayers(po::ImageManifest::Reader m, std::vector<SourceFile>* files) {
    const std::string artifact = Str(m.getArtifactType());
    const std::string config = m.hasConfig() ? Str(m.getConfig().getMediaType()) : "";
    if (!IsModelType(artifact) && !IsModelType(config)) {
      return Status::InvalidArgument(Describe() + " is not a ModelPack artifact (artifactType '" +
                                     artifact + "', config '" + config + "')");
    }
    for (auto layer : m.getLayers()) {
      const std::string type = Str(layer.getMediaType());
      const std::string digest = Str(layer.getDigest());
      Result<Digest> sha = Digest::ParseHex(StartsWith(digest, "sha256:") ? digest.substr(7) : "");
      if (!sha.ok()) {
        return Status::InvalidArgument(Describe() + ": layer digest '" + digest +
                                       "' is not sha256:<64 hex digits>");
      }
      const std::string blob = base_ + "/v2/" + repo_ + "/blobs/" + digest;
      if (EndsWith(type, ".tar")) {
        SHOAL_RETURN_IF_ERROR(AddTarMembers(blob, digest, layer.getSize(), files));
        continue;
      }
      if (!IsModelType(type) || !EndsWith(type, ".raw")) {
        return Status::InvalidArgument(Describe() + ": layer type '" + type +
                                       "' is not a ModelPack .raw or .tar layer");
      }
      auto a = layer.getAnnotations();
      SourceFile f;
      f.path = Str(a.getFilepath());
      if (f.path.empty()) f.path = Str(a.getCnaiFilepath());
      if (f.path.empty()) f.path = Str(a.getTitle());
      if (f.path.empty()) {
        return Status::InvalidArgument(Describe() + ": layer " + digest +
                                       " has no org.cncf.model.filepath annotation");
      }
      f.size = layer.getSize();
      f.sha256 = *sha;
      f.etag = digest;
      f.locator = blob;
      files->push_back(std::move(f));
    }
    return Status::OK();
  }

  // Each regular member of a tar layer, found by reading its headers in
  // place; its bytes are the range after its header.
  Status AddTarMembers(const std::string& blob, const std::string& digest, uint64_t size,
                       std::vector<SourceFile>* files) {
    uint64_t at = 0;
    std::string long_name;
    for (int members = 0; at + kTarBlock <= size; ++members) {
      if (members == kMaxTarMembers) {
        return Status::InvalidArgument(Describe() + ": layer " + digest + " has too many members");
      }
      StringSink header;
      WebResponse resp;
      SHOAL_RETURN_IF_ERROR(Get(blob, {}, &header, at, kTarBlock, &resp));
      if (resp.status / 100 != 2) return Error(resp, "layer " + digest);
      const std::string& h = header.str();
      if (h.size() != kTarBlock) return Status::Corruption(Describe() + ": short tar header");
      if (h.find_first_not_of('\0') == std::string::npos) break;  // the end blocks
      const uint64_t len = TarNumber(h.data() + 124, 12);
      const char kind = h[156];
      const uint64_t data = at + kTarBlock;
      if (data + len > size) {
        return Status::Corruption(Describe() + ": tar member runs past layer " + digest);
      }
      if (kind == 'x' || kind == 'L') {  // the next member's long name
        StringSink body;
        SHOAL_RETURN_IF_ERROR(Get(blob, {}, &body, data, std::min<uint64_t>(len, 65536), &resp));
        long_name =
            kind == 'L' ? TarString(body.str().data(), body.str().size()) : PaxPath(body.str());
      } else if (kind == '0' || kind == '\0') {
        std::string name = long_name;
        if (name.empty()) {
          const std::string prefix = TarString(h.data() + 345, 155);
          name = TarString(h.data(), 100);
          if (!prefix.empty() && h.compare(257, 5, "ustar") == 0) name = prefix + "/" + name;
        }
        while (StartsWith(name, "./")) name = name.substr(2);
        SourceFile f;
        f.path = name;
        f.size = len;
        f.etag = digest + "#" + std::to_string(data);
        f.locator = blob;
        f.base = data;
        files->push_back(std::move(f));
        long_name.clear();
      } else if (kind != '5') {
        return Status::InvalidArgument(Describe() + ": layer " + digest +
                                       " holds a tar member that is not a file or folder");
      }
      at = data + (len + kTarBlock - 1) / kTarBlock * kTarBlock;
    }
    return Status::OK();
  }

  const std::string url_, base_, repo_, ref_;
  const std::string username_, password_;
  WebClient client_;
  std::mutex mu_;
  std::string authorization_;  // protected by mu_
};

}  // namespace

Result<std::unique_ptr<ImportSource>> MakeOciSource(const std::string& url,
                                                    const ImportSourceOptions& options) {
  const std::string rest = url.substr(6);  // after oci://
  const size_t slash = rest.find('/');
  std::string repo_ref = slash == std::string::npos ? "" : rest.substr(slash + 1);
  std::string ref = "latest";
  if (size_t at = repo_ref.find('@'); at != std::string::npos) {
    ref = repo_ref.substr(at + 1);
    repo_ref.resize(at);
  } else if (size_t colon = repo_ref.rfind(':'); colon != std::string::npos) {
    ref = repo_ref.substr(colon + 1);
    repo_ref.resize(colon);
  }
  if (slash == std::string::npos || slash == 0 || repo_ref.empty() || ref.empty() ||
      repo_ref.find("..") != std::string::npos) {
    return Status::InvalidArgument("'" + url.substr(0, 200) +
                                   "' must be oci://registry/repository[:tag|@sha256:digest]");
  }
  const std::string base =
      (options.oci_plain_http ? "http://" : "https://") + rest.substr(0, slash);
  SHOAL_RETURN_IF_ERROR(ParseWebUrl(base).status());
  return std::unique_ptr<ImportSource>(new OciSource(url, base, repo_ref, ref, options));
}

}  // namespace shoal
