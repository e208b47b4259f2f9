// WebClient: GET and HEAD of absolute http(s) URLs, for importing models
// from wherever they live (a hub, a web server, a registry).
//
// Redirects are followed (at most kMaxRedirects) to http and https only; a
// redirect to another host drops the Authorization header, as the hub's and
// registries' own clients do, so a token never reaches object storage.
// Transient failures (resets, timeouts, 5xx, 429) are retried with
// backoff, and a GET cut off mid-body resumes with a Range request where it
// stopped, so the sink never sees a byte twice. Connections are kept alive
// per host.
//
// Thread-safety: every method may be called from many threads at once.
#ifndef SHOAL_AGENT_IMPORT_WEB_CLIENT_H_
#define SHOAL_AGENT_IMPORT_WEB_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "shoal/byte_stream.h"
#include "shoal/http/http_connection_pool.h"
#include "shoal/http/http_types.h"
#include "shoal/http/retry_policy.h"
#include "shoal/status.h"

namespace shoal {

// An absolute http(s) URL split into where to connect and what to ask.
struct WebUrl {
  HttpEndpoint endpoint;
  std::string target;  // path and query, starting with '/'

  std::string ToString() const { return endpoint.ToString() + target; }
};

// Parses "http[s]://host[:port][/path][?query]"; a fragment is dropped.
// Any other scheme is InvalidArgument.
Result<WebUrl> ParseWebUrl(const std::string& url);

// Resolves a Location header against the URL it answered: absolute URLs,
// scheme-relative "//host/path" and absolute paths "/path".
Result<WebUrl> ResolveLocation(const WebUrl& base, const std::string& location);

struct WebClientOptions {
  bool verify_tls = true;
  std::string ca_file;  // PEM bundle to trust; empty = the system's store
  uint32_t connect_timeout_ms = 5000;
  uint32_t io_timeout_ms = 30000;
  uint32_t max_attempts = 5;  // per request, the first included
  uint32_t backoff_base_ms = 200;
  uint32_t backoff_max_ms = 5000;
};

struct WebRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  HttpHeaders headers;           // Authorization, Accept...; Range is set from the fields below
  uint64_t offset = 0;           // first byte wanted
  uint64_t length = UINT64_MAX;  // bytes wanted; UINT64_MAX = to the end
};

struct WebResponse {
  int status = 0;
  HttpHeaders headers;    // of the last answer; names in lower case
  std::string body;       // the body when it was not streamed (errors, no sink)
  std::string final_url;  // after redirects

  std::string Header(const std::string& name) const { return headers.Get(name).value_or(""); }
};

class WebClient {
 public:
  static constexpr int kMaxRedirects = 10;
  // Bodies kept in WebResponse::body when no sink is given.
  static constexpr size_t kMaxKeptBody = 16u << 20;

  explicit WebClient(WebClientOptions options);
  ~WebClient();
  WebClient(const WebClient&) = delete;
  WebClient& operator=(const WebClient&) = delete;

  // Sends `request`, following redirects. A 2xx GET body goes to `sink`
  // (or, without one, into response->body, up to kMaxKeptBody). Any other
  // final status comes back as OK with response->status set: the caller
  // says what a 404 means. A non-OK status is a transport failure after
  // retries, a bad redirect, or the sink's own error.
  Status Send(const WebRequest& request, ByteSink* sink, WebResponse* response);

 private:
  struct Attempt;
  Status SendOnce(const WebUrl& url, const WebRequest& request, uint64_t delivered, ByteSink* sink,
                  WebResponse* response, Attempt* attempt);
  HttpConnectionPool& PoolFor(const HttpEndpoint& endpoint);

  const WebClientOptions options_;
  const RetryPolicy retry_;
  std::mutex mu_;
  std::shared_ptr<TlsClientContext> tls_;                             // protected by mu_
  std::map<std::string, std::unique_ptr<HttpConnectionPool>> pools_;  // protected by mu_
};

// A GET of `url` whose body must be 2xx and at most `limit` bytes, as text:
// for JSON API answers. `what` names it in errors.
Result<std::string> GetText(WebClient& client, const std::string& url, const HttpHeaders& headers,
                            const std::string& what, WebResponse* response = nullptr);

}  // namespace shoal

#endif  // SHOAL_AGENT_IMPORT_WEB_CLIENT_H_
