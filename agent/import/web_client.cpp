#include "import/web_client.h"

#include <thread>

#include "shoal/uri_encode.h"

namespace shoal {
namespace {

// Keep-alive connections kept per host: about the files fetched at once.
constexpr size_t kIdlePerHost = 16;

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool SameEndpoint(const HttpEndpoint& a, const HttpEndpoint& b) {
  return a.tls == b.tls && a.host == b.host && a.port == b.port;
}

// Hands body bytes on to the caller's sink (or keeps them, bounded), and
// refuses a body that does not start where the request asked: a server that
// answers a ranged GET with 200 would otherwise repeat bytes.
class BodySink : public ByteSink {
 public:
  BodySink(ByteSink* target, std::string* keep, const OriginHttpResponse* head, bool ranged,
           uint64_t max_bytes)
      : target_(target), keep_(keep), head_(head), ranged_(ranged), max_bytes_(max_bytes) {}

  Status Write(const uint8_t* data, size_t len) override {
    if (ranged_ && head_->status != 206) {
      return Status::InvalidArgument("the server answered a byte-range request with " +
                                     std::to_string(head_->status) + ", not 206");
    }
    if (len > max_bytes_ - written_) {
      return Status::InvalidArgument("the server sent more than the " + std::to_string(max_bytes_) +
                                     " bytes asked for");
    }
    written_ += len;
    if (target_ != nullptr) return target_->Write(data, len);
    keep_->append(reinterpret_cast<const char*>(data), len);
    return Status::OK();
  }

 private:
  ByteSink* const target_;
  std::string* const keep_;
  const OriginHttpResponse* const head_;
  const bool ranged_;
  const uint64_t max_bytes_;
  uint64_t written_ = 0;
};

}  // namespace

Result<WebUrl> ParseWebUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    return Status::InvalidArgument("'" + url.substr(0, 200) + "' is not an absolute URL");
  }
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidArgument("'" + url.substr(0, 200) + "': only http and https are allowed");
  }
  std::string rest = url.substr(scheme_end + 3);
  if (size_t hash = rest.find('#'); hash != std::string::npos) rest.resize(hash);
  size_t path_at = rest.find_first_of("/?");
  std::string authority = rest.substr(0, path_at);
  if (authority.find('@') != std::string::npos) {
    return Status::InvalidArgument("'" + url.substr(0, 200) +
                                   "': credentials in the URL are not accepted");
  }
  Result<HttpEndpoint> ep = ParseHttpEndpoint(scheme + "://" + authority);
  if (!ep.ok()) return ep.status();
  WebUrl out;
  out.endpoint = *ep;
  out.target = path_at == std::string::npos ? "/" : rest.substr(path_at);
  if (out.target.front() == '?') out.target = "/" + out.target;
  return out;
}

Result<WebUrl> ResolveLocation(const WebUrl& base, const std::string& location) {
  if (location.empty()) return Status::InvalidArgument("a redirect with no Location");
  if (location.rfind("//", 0) == 0) {
    return ParseWebUrl((base.endpoint.tls ? "https:" : "http:") + location);
  }
  if (location.front() == '/') {
    WebUrl out = base;
    out.target = location;
    return out;
  }
  if (location.find("://") == std::string::npos) {
    // Relative to the base's folder.
    WebUrl out = base;
    std::string path = base.target.substr(0, base.target.find('?'));
    out.target = path.substr(0, path.rfind('/') + 1) + location;
    return out;
  }
  Result<WebUrl> parsed = ParseWebUrl(location);
  if (!parsed.ok()) {
    return Status::InvalidArgument("redirect to '" + location.substr(0, 200) +
                                   "' refused: only http and https are followed");
  }
  return parsed;
}

struct WebClient::Attempt {
  ExchangeInfo info;
};

WebClient::WebClient(WebClientOptions options)
    : options_(std::move(options)),
      retry_(options_.max_attempts, options_.backoff_base_ms, options_.backoff_max_ms) {}

WebClient::~WebClient() = default;

HttpConnectionPool& WebClient::PoolFor(const HttpEndpoint& endpoint) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<HttpConnectionPool>& pool = pools_[endpoint.ToString()];
  if (!pool) {
    HttpTimeouts timeouts{options_.connect_timeout_ms, options_.io_timeout_ms};
    pool = std::make_unique<HttpConnectionPool>(endpoint, endpoint.tls ? tls_ : nullptr, timeouts,
                                                kIdlePerHost);
  }
  return *pool;
}

Status WebClient::SendOnce(const WebUrl& url, const WebRequest& request, uint64_t delivered,
                           ByteSink* sink, WebResponse* response, Attempt* attempt) {
  OriginHttpRequest req;
  req.method = request.method;
  req.target = url.target;
  req.headers = request.headers;
  req.headers.Set("host", url.endpoint.HostHeader());
  req.headers.Set("user-agent", "shoal-import/1");
  req.headers.Set("accept-encoding", "identity");
  const uint64_t start = request.offset + delivered;
  const bool bounded = request.length != UINT64_MAX;
  const bool ranged = request.method == "GET" && (start > 0 || bounded);
  if (ranged) {
    req.headers.Set("range", "bytes=" + std::to_string(start) + "-" +
                                 (bounded ? std::to_string(request.offset + request.length - 1)
                                          : std::string()));
  }
  if (url.endpoint.tls) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!tls_) {  // made once, on the first https URL
      auto made = TlsClientContext::Make(options_.verify_tls, options_.ca_file);
      if (!made.ok()) return made.status();
      tls_ = std::move(made).value();
    }
  }
  HttpConnectionPool& pool = PoolFor(url.endpoint);
  std::unique_ptr<HttpConnection> conn = pool.Acquire();
  OriginHttpResponse raw;
  const uint64_t wanted = bounded ? request.length - delivered : UINT64_MAX;
  response->body.clear();
  BodySink body(sink, &response->body, &raw, ranged, sink != nullptr ? wanted : kMaxKeptBody);
  Status s = conn->Exchange(req, &body, &raw, &attempt->info);
  if (conn->reusable() && s.ok()) pool.Release(std::move(conn));
  response->status = raw.status;
  response->headers = raw.headers;
  if (raw.status / 100 != 2 && response->body.empty()) response->body = raw.body;
  return s;
}

Status WebClient::Send(const WebRequest& request, ByteSink* sink, WebResponse* response) {
  Result<WebUrl> url = ParseWebUrl(request.url);
  if (!url.ok()) return url.status();
  WebRequest req = request;
  uint64_t delivered = 0;
  int redirects = 0;
  uint32_t failures = 0;
  for (;;) {
    Attempt attempt;
    Status s = SendOnce(*url, req, delivered, sink, response, &attempt);
    if (sink != nullptr) delivered += attempt.info.body_bytes;
    if (s.ok() && IsRedirect(response->status)) {
      if (++redirects > kMaxRedirects) {
        return Status::InvalidArgument("more than " + std::to_string(kMaxRedirects) +
                                       " redirects from " + request.url.substr(0, 200));
      }
      Result<WebUrl> next = ResolveLocation(*url, response->Header("location"));
      if (!next.ok()) return next.status().WithContext(url->ToString().substr(0, 200));
      // A token for the hub or registry is not for the storage it sends us to.
      if (!SameEndpoint(next->endpoint, url->endpoint)) req.headers.Remove("authorization");
      if (response->status == 303) req.method = req.method == "HEAD" ? "HEAD" : "GET";
      url = std::move(next);
      continue;
    }
    const bool transient = s.ok() && RetryPolicy::IsTransientHttp(response->status, "");
    const bool retry_transport = !s.ok() && attempt.info.retryable && !attempt.info.sink_failed;
    if ((transient || retry_transport) && ++failures < retry_.max_attempts()) {
      std::this_thread::sleep_for(retry_.Backoff(failures));
      continue;
    }
    response->final_url = url->ToString();
    if (!s.ok()) return s.WithContext(request.method + " " + url->ToString().substr(0, 200));
    return Status::OK();
  }
}

Result<std::string> GetText(WebClient& client, const std::string& url, const HttpHeaders& headers,
                            const std::string& what, WebResponse* response) {
  WebResponse local;
  WebResponse* r = response != nullptr ? response : &local;
  WebRequest req;
  req.url = url;
  req.headers = headers;
  SHOAL_RETURN_IF_ERROR(client.Send(req, nullptr, r).WithContext(what));
  if (r->status / 100 != 2) {
    return Status::IOError(what + ": " + url.substr(0, 200) + " answered " +
                           std::to_string(r->status));
  }
  return std::move(r->body);
}

}  // namespace shoal
