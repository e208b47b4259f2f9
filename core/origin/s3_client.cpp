#include "origin/s3_client.h"

#include <ctime>
#include <thread>

#include "origin/s3_error.h"
#include "shoal/sha256.h"
#include "shoal/uri_encode.h"

namespace shoal {
namespace {

HttpEndpoint ConnectionEndpoint(const S3ClientConfig& c) {
  HttpEndpoint ep = c.endpoint;
  if (c.virtual_host) ep.host = c.bucket + "." + ep.host;
  return ep;
}

// Passes bytes [skip, skip + limit) of a 2xx body on to the caller's sink,
// and counts them. It decides what to skip once the status is known: a 206
// starts where the Range asked, a 200 (the server ignored Range) at byte 0.
class RangeSink : public ByteSink {
 public:
  RangeSink(ByteSink* inner, const OriginHttpResponse* response, uint64_t start, uint64_t limit)
      : inner_(inner), response_(response), start_(start), limit_(limit) {}

  Status Write(const uint8_t* data, size_t len) override {
    if (!decided_) {
      skip_ = response_->status == 200 ? start_ : 0;
      decided_ = true;
    }
    if (skip_ > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, len));
      skip_ -= n;
      data += n;
      len -= n;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(len, limit_ - delivered_));
    if (take == 0) return Status::OK();
    SHOAL_RETURN_IF_ERROR(inner_->Write(data, take));
    delivered_ += take;
    return Status::OK();
  }
  uint64_t delivered() const { return delivered_; }

 private:
  ByteSink* inner_;
  const OriginHttpResponse* response_;
  uint64_t start_, limit_, skip_ = 0, delivered_ = 0;
  bool decided_ = false;
};

}  // namespace

S3Client::S3Client(S3ClientConfig config)
    : config_(std::move(config)),
      conn_endpoint_(ConnectionEndpoint(config_)),
      signer_(config_.credentials, config_.region),
      retry_(config_.max_attempts, config_.backoff_base_ms, config_.backoff_max_ms),
      pool_(conn_endpoint_, config_.tls, config_.timeouts, config_.max_idle_connections) {}

std::string S3Client::Describe(const std::string& key) const {
  return "s3://" + config_.bucket + "/" + key;
}

std::string S3Client::Path(const std::string& key) const {
  if (config_.virtual_host) return "/" + UriEncodePath(key);
  return "/" + config_.bucket + (key.empty() ? "" : "/" + UriEncodePath(key));
}

OriginHttpRequest S3Client::Build(const S3Call& call, const std::string& payload_sha256,
                                  uint64_t already_delivered) const {
  SignableRequest sr;
  sr.method = call.method;
  sr.path = Path(call.key);
  sr.query = call.query;
  sr.headers.assign(call.headers.begin(), call.headers.end());
  sr.headers.emplace_back("host", conn_endpoint_.HostHeader());
  if (call.sink != nullptr &&
      (call.offset > 0 || call.length != UINT64_MAX || already_delivered > 0)) {
    const uint64_t start = call.offset + already_delivered;
    std::string range = "bytes=" + std::to_string(start) + "-";
    if (call.length != UINT64_MAX) range += std::to_string(call.offset + call.length - 1);
    sr.headers.emplace_back("range", range);
  }
  sr.payload_sha256 = payload_sha256;
  auto auth = signer_.SignHeaders(sr, std::time(nullptr));

  OriginHttpRequest req;
  req.method = call.method;
  req.target = sr.path;
  std::string query = CanonicalQueryString(call.query);
  if (!query.empty()) req.target += "?" + query;
  for (const auto& [k, v] : sr.headers) req.headers.Add(k, v);
  for (const auto& [k, v] : auth) req.headers.Add(k, v);
  req.body = call.body;
  req.body_len = call.body_len;
  return req;
}

Status S3Client::Execute(const S3Call& call, OriginHttpResponse* response) {
  std::string payload = call.payload_sha256;
  if (payload.empty()) {
    payload =
        call.body_len == 0 ? kEmptyPayloadSha256 : Sha256::Of(call.body, call.body_len).ToHex();
  }
  S3ErrorContext ctx{call.method, Describe(call.key), config_.bucket, config_.endpoint.ToString(),
                     config_.credentials.access_key};
  uint64_t delivered = 0;
  for (uint32_t attempt = 1;; ++attempt) {
    if (attempt > 1) {
      counters_.AddRetry(call.op);
      std::this_thread::sleep_for(retry_.Backoff(attempt - 1));
    }
    counters_.AddRequest(call.op);
    OriginHttpRequest req = Build(call, payload, delivered);
    std::unique_ptr<HttpConnection> conn = pool_.Acquire();
    ExchangeInfo info;
    const uint64_t remaining = call.length == UINT64_MAX ? UINT64_MAX : call.length - delivered;
    RangeSink range(call.sink, response, call.offset + delivered, remaining);
    Status s = conn->Exchange(req, call.sink ? &range : nullptr, response, &info);
    delivered += range.delivered();
    if (call.op == OriginOp::kGet || call.op == OriginOp::kList) {
      counters_.AddBytes(call.op, call.sink ? range.delivered() : response->body.size());
    }
    if (!s.ok()) {
      if (info.sink_failed) return s;
      const bool may_retry = info.retryable && (call.idempotent || !info.sent_any);
      if (may_retry && attempt < retry_.max_attempts()) {
        continue;
      }
      if (!may_retry) return s.WithContext(ctx.operation + " " + ctx.object);
      return Status::Unavailable(ctx.operation + " " + ctx.object + ": " + s.message() +
                                 " (gave up after " + std::to_string(attempt) + " attempts)");
    }
    pool_.Release(std::move(conn));
    if (response->status / 100 == 2) {
      if (call.sink && call.length != UINT64_MAX && delivered < call.length) {
        return Status::InvalidArgument(
            ctx.operation + " " + ctx.object + ": the range " + std::to_string(call.offset) + "+" +
            std::to_string(call.length) + " reaches past the end of the object");
      }
      if (call.op == OriginOp::kPut) counters_.AddBytes(call.op, call.body_len);
      return Status::OK();
    }
    S3ErrorBody error = ParseS3Error(response->body);
    if (call.idempotent && RetryPolicy::IsTransientHttp(response->status, error.code) &&
        attempt < retry_.max_attempts()) {
      continue;
    }
    Status mapped = S3ErrorToStatus(response->status, error, ctx);
    if (RetryPolicy::IsTransientHttp(response->status, error.code) && attempt > 1) {
      mapped = mapped.WithContext("gave up after " + std::to_string(attempt) + " attempts");
    }
    return mapped;
  }
}

std::string S3Client::PresignedGetUrl(const std::string& key, uint32_t expires_seconds) const {
  SignableRequest sr;
  sr.method = "GET";
  sr.path = Path(key);
  sr.headers.emplace_back("host", conn_endpoint_.HostHeader());
  return std::string(conn_endpoint_.tls ? "https://" : "http://") + conn_endpoint_.HostHeader() +
         sr.path + "?" + signer_.PresignQuery(sr, std::time(nullptr), expires_seconds);
}

}  // namespace shoal
