// S3Client: sends one S3 request, signed, over the connection pool, and
// retries it when that is safe and useful.
//
// It knows the endpoint, the bucket and the addressing style, builds paths
// and Host headers, signs with SigV4 over the payload hash, streams GET
// bodies into sinks (resuming a broken ranged GET where it stopped), and
// turns S3 error answers into one-line Status messages.
//
// Thread-safety: Execute and PresignedUrl may be called from many threads.
#ifndef SHOAL_CORE_S3_CLIENT_H_
#define SHOAL_CORE_S3_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shoal/byte_stream.h"
#include "shoal/http/http_connection_pool.h"
#include "shoal/http/http_types.h"
#include "shoal/http/retry_policy.h"
#include "shoal/origin_counters.h"
#include "shoal/s3_signer.h"

namespace shoal {

struct S3ClientConfig {
  HttpEndpoint endpoint;  // the service endpoint, without the bucket
  std::string bucket;
  bool virtual_host = false;  // bucket in the host name rather than the path
  S3Credentials credentials;
  std::string region;
  HttpTimeouts timeouts;
  uint32_t max_attempts = 5;
  uint32_t backoff_base_ms = 100;
  uint32_t backoff_max_ms = 5000;
  size_t max_idle_connections = 64;
  std::shared_ptr<TlsClientContext> tls;  // required iff endpoint.tls
};

struct S3Call {
  OriginOp op = OriginOp::kGet;  // which counters it updates
  std::string method;            // "GET", "PUT", "POST", "HEAD", "DELETE"
  std::string key;               // full object key; empty for bucket-level calls
  std::vector<std::pair<std::string, std::string>> query;  // raw names and values
  HttpHeaders headers;                                     // extra headers to send and sign
  const uint8_t* body = nullptr;                           // not owned
  size_t body_len = 0;
  std::string payload_sha256;  // hex; empty = computed from the body
  bool idempotent = true;      // false: retried only if no byte was sent

  // A GET whose 2xx body streams into `sink`, limited to [offset, offset+length).
  ByteSink* sink = nullptr;
  uint64_t offset = 0;
  uint64_t length = UINT64_MAX;  // UINT64_MAX = to the end
};

class S3Client {
 public:
  explicit S3Client(S3ClientConfig config);

  // Sends `call`, retrying transient failures of idempotent calls. OK only
  // for a 2xx answer, which is left in *response (its body, unless streamed).
  Status Execute(const S3Call& call, OriginHttpResponse* response);

  // A presigned GET URL for `key`, valid `expires_seconds` from now.
  std::string PresignedGetUrl(const std::string& key, uint32_t expires_seconds) const;

  // "s3://bucket/key", for messages.
  std::string Describe(const std::string& key) const;
  const std::string& bucket() const { return config_.bucket; }
  // Requests, retries and bytes per operation; callers add their errors.
  OriginCounterSet& counters() { return counters_; }
  const OriginCounterSet& counters() const { return counters_; }

 private:
  std::string Path(const std::string& key) const;
  OriginHttpRequest Build(const S3Call& call, const std::string& payload_sha256,
                          uint64_t already_delivered) const;

  // Constant after construction.
  const S3ClientConfig config_;
  const HttpEndpoint conn_endpoint_;  // with the bucket prepended for virtual hosts
  const SigV4Signer signer_;
  const RetryPolicy retry_;
  // Thread-safe on their own.
  HttpConnectionPool pool_;
  OriginCounterSet counters_;
};

}  // namespace shoal

#endif  // SHOAL_CORE_S3_CLIENT_H_
