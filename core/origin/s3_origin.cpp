#include "shoal/s3_origin.h"

#include <algorithm>
#include <cstdlib>

#include "origin/s3_client.h"
#include "origin/s3_list.h"
#include "origin/s3_multipart.h"
#include "shoal/s3_credentials.h"

namespace shoal {
namespace {

// A bucket name that can be a DNS label of a virtual host.
bool DnsCompatible(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

class S3OriginImpl final : public S3Origin {
 public:
  S3OriginImpl(S3ClientConfig config, std::string prefix, const OriginOptions& options)
      : client_(std::move(config)),
        prefix_(std::move(prefix)),
        multipart_threshold_(options.multipart_threshold),
        plan_{options.part_size, options.upload_parallelism} {}

  Status Get(const std::string& key, uint64_t offset, uint64_t length, ByteSink& sink) override {
    SHOAL_RETURN_IF_ERROR(Check(key, OriginOp::kGet));
    if (length == 0) return Status::OK();
    S3Call call = ObjectCall(OriginOp::kGet, "GET", key);
    call.sink = &sink;
    call.offset = offset;
    call.length = length == kToEnd ? UINT64_MAX : length;
    OriginHttpResponse resp;
    return Send(call, &resp);
  }

  Status Put(const std::string& key, const uint8_t* data, size_t len) override {
    SHOAL_RETURN_IF_ERROR(Check(key, OriginOp::kPut));
    S3Call call = ObjectCall(OriginOp::kPut, "PUT", key);
    call.body = data;
    call.body_len = len;
    OriginHttpResponse resp;
    return Send(call, &resp);
  }

  Status PutStream(const std::string& key, ByteSource& source) override {
    SHOAL_RETURN_IF_ERROR(Check(key, OriginOp::kPut));
    // Read ahead up to the threshold, growing the buffer as bytes come, so
    // a small file costs a small buffer.
    std::vector<uint8_t> head;
    size_t got = 0;
    while (got < multipart_threshold_) {
      head.resize(std::min<uint64_t>(multipart_threshold_, std::max<size_t>(2 * got, 1 << 20)));
      Result<size_t> n = ReadFull(source, head.data() + got, head.size() - got);
      if (!n.ok()) return Count(OriginOp::kPut, n.status());
      got += *n;
      if (got < head.size()) break;  // the source ended
    }
    if (got < multipart_threshold_) return Put(key, head.data(), got);
    return Count(OriginOp::kPut,
                 UploadMultipart(client_, prefix_ + key, std::move(head), source, plan_));
  }

  Result<ObjectInfo> Head(const std::string& key) override {
    SHOAL_RETURN_IF_ERROR(Check(key, OriginOp::kHead));
    S3Call call = ObjectCall(OriginOp::kHead, "HEAD", key);
    OriginHttpResponse resp;
    SHOAL_RETURN_IF_ERROR(Send(call, &resp));
    const std::string len = resp.Header("content-length");
    char* end = nullptr;
    unsigned long long size = std::strtoull(len.c_str(), &end, 10);
    if (len.empty() || *end != '\0' || len.find_first_not_of("0123456789") != std::string::npos) {
      return Count(OriginOp::kHead, Status::Corruption("HEAD " + client_.Describe(call.key) +
                                                       ": bad Content-Length '" + len + "'"));
    }
    return ObjectInfo{key, size, resp.Header("etag")};
  }

  Result<ListPage> List(const std::string& prefix, const std::string& token,
                        uint32_t max_keys) override {
    if (max_keys == 0 || max_keys > 1000) {
      return Count(OriginOp::kList,
                   Status::InvalidArgument("List: max_keys must be between 1 and 1000"));
    }
    S3Call call;
    call.op = OriginOp::kList;
    call.method = "GET";
    call.query = {{"list-type", "2"},
                  {"prefix", prefix_ + prefix},
                  {"max-keys", std::to_string(max_keys)},
                  {"encoding-type", "url"}};
    if (!token.empty()) call.query.emplace_back("continuation-token", token);
    OriginHttpResponse resp;
    SHOAL_RETURN_IF_ERROR(Send(call, &resp));
    Result<ListPage> page = ParseListObjectsV2(resp.body, prefix_);
    if (!page.ok()) {
      return Count(OriginOp::kList,
                   page.status().WithContext("List " + client_.Describe(prefix_ + prefix)));
    }
    return page;
  }

  Status Delete(const std::string& key) override {
    SHOAL_RETURN_IF_ERROR(Check(key, OriginOp::kDelete));
    S3Call call = ObjectCall(OriginOp::kDelete, "DELETE", key);
    OriginHttpResponse resp;
    // S3 answers 204 for a missing key too; a NotFound here is the bucket.
    return Send(call, &resp);
  }

  Result<std::string> PresignGet(const std::string& key, uint32_t expires_seconds) override {
    SHOAL_RETURN_IF_ERROR(Check(key, OriginOp::kGet));
    if (expires_seconds == 0 || expires_seconds > 7 * 24 * 3600) {
      return Status::InvalidArgument("a presigned URL must expire within 1 s to 7 days");
    }
    return client_.PresignedGetUrl(prefix_ + key, expires_seconds);
  }

  OriginCounters counters() const override { return client_.counters().Snapshot(); }
  std::string Describe() const override { return client_.Describe(prefix_); }

 private:
  Status Check(const std::string& key, OriginOp op) {
    if (key.empty() || prefix_.size() + key.size() > 1024) {
      return Count(op, Status::InvalidArgument("S3 key '" + key.substr(0, 200) +
                                               "' must be 1 to 1024 bytes with the prefix"));
    }
    return Status::OK();
  }
  // A call on one object under the prefix.
  S3Call ObjectCall(OriginOp op, std::string method, const std::string& key) const {
    S3Call call;
    call.op = op;
    call.method = std::move(method);
    call.key = prefix_ + key;
    return call;
  }
  // Executes `call`, counting a failure as an error of call.op.
  Status Send(const S3Call& call, OriginHttpResponse* resp) {
    return Count(call.op, client_.Execute(call, resp));
  }
  Status Count(OriginOp op, Status s) {
    if (!s.ok()) client_.counters().AddError(op);
    return s;
  }

  S3Client client_;
  const std::string prefix_;  // "" or ending in '/'
  const uint64_t multipart_threshold_;
  const MultipartPlan plan_;
};

}  // namespace

Result<std::unique_ptr<S3Origin>> NewS3Origin(const OriginOptions& options) {
  SHOAL_RETURN_IF_ERROR(options.Validate());
  if (options.url.rfind("s3://", 0) != 0) {
    return Status::InvalidArgument("'" + options.url + "' is not an s3:// URL");
  }
  const std::string rest = options.url.substr(5);
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';

  S3ClientConfig config;
  config.region = ResolveRegion(options);
  const std::string endpoint_url = options.endpoint.empty()
                                       ? "https://s3." + config.region + ".amazonaws.com"
                                       : options.endpoint;
  Result<HttpEndpoint> endpoint = ParseHttpEndpoint(endpoint_url);
  if (!endpoint.ok()) return endpoint.status();
  Result<S3Credentials> credentials = ResolveCredentials(options);
  if (!credentials.ok()) return credentials.status();

  config.endpoint = *endpoint;
  config.bucket = bucket;
  config.virtual_host = options.addressing == AddressingStyle::kVirtualHost ||
                        (options.addressing == AddressingStyle::kAuto && options.endpoint.empty() &&
                         DnsCompatible(bucket));
  if (config.virtual_host && !DnsCompatible(bucket)) {
    return Status::InvalidArgument("bucket '" + bucket +
                                   "' cannot be a host name; use path-style addressing");
  }
  config.credentials = *credentials;
  config.timeouts = HttpTimeouts{options.connect_timeout_ms, options.io_timeout_ms};
  config.max_attempts = options.max_attempts;
  config.backoff_base_ms = options.backoff_base_ms;
  config.backoff_max_ms = options.backoff_max_ms;
  config.max_idle_connections = options.max_idle_connections;
  if (config.endpoint.tls) {
    auto tls = TlsClientContext::Make(options.verify_tls, options.ca_file);
    if (!tls.ok()) return tls.status();
    config.tls = *tls;
  }
  return std::unique_ptr<S3Origin>(new S3OriginImpl(std::move(config), prefix, options));
}

}  // namespace shoal
