#include "kv/etcd_client.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "kv/etcd_codec.h"
#include "shoal/http/http_connection_pool.h"
#include "shoal/http/http_types.h"

namespace shoal::tracker {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRoundPause = std::chrono::milliseconds(100);

// gRPC status codes etcd's gateway returns in {"code": N}.
constexpr int kGrpcDeadlineExceeded = 4;
constexpr int kGrpcUnavailable = 14;

// Which failures a call may retry on another member.
enum class Retry {
  kAnywhere,  // a read, or a write whose repetition is harmless (keepalive)
  kUnsent,    // a write: only if it never left this process, or etcd had no leader
};

Status FromGrpc(int code, const std::string& msg) {
  switch (code) {
    case 3:  // InvalidArgument: empty key, request too large
      if (msg.find("too large") != std::string::npos) {
        return Status::InvalidArgument(msg + " (over etcd's --max-request-bytes)");
      }
      return Status::InvalidArgument(msg);
    case 9:   // FailedPrecondition
    case 11:  // OutOfRange: a compacted or future revision
    case 12:  // Unimplemented
      return Status::InvalidArgument(msg);
    case 5:
      return Status::NotFound(msg);
    case 6:
      return Status::AlreadyExists(msg);
    case 7:
      return Status::PermissionDenied(msg);
    case 8:  // ResourceExhausted: over the space quota, or a message over gRPC's limit
      if (msg.find("space exceeded") != std::string::npos) return Status::NoSpace(msg);
      return Status::InvalidArgument(msg + " (over etcd's --max-request-bytes)");
    case 16:
      return Status::Unauthenticated(msg);
    default:
      return Status::Unavailable(msg);
  }
}

// One attempt's outcome.
struct Attempt {
  Status status;
  std::string body;        // the 200 answer
  bool retryable = false;  // another member may do better
};

class EtcdClientImpl : public EtcdClient {
 public:
  EtcdClientImpl(const EtcdOptions& options, std::vector<HttpEndpoint> endpoints,
                 const std::shared_ptr<TlsClientContext>& tls)
      : options_(options) {
    HttpTimeouts timeouts;
    timeouts.connect_ms = options.connect_timeout_ms;
    timeouts.io_ms = options.request_timeout_ms;
    for (auto& ep : endpoints) {
      pools_.push_back(std::make_unique<HttpConnectionPool>(ep, ep.tls ? tls : nullptr, timeouts,
                                                            options.max_idle_per_endpoint));
    }
  }

  Result<std::optional<KeyValue>> Get(const std::string& key) override {
    RangeRequest r;
    r.key = key;
    Result<RangeResult> got = Range(r);
    if (!got.ok()) return got.status();
    if (got->kvs.empty()) return std::optional<KeyValue>();
    return std::optional<KeyValue>(std::move(got->kvs.front()));
  }

  Result<RangeResult> Range(const RangeRequest& request) override {
    if (request.key.empty()) return Status::InvalidArgument("etcd range: the key is empty");
    Result<std::string> body =
        Call("range", "/v3/kv/range", etcd_codec::EncodeRange(request), Retry::kAnywhere);
    if (!body.ok()) return body.status();
    return etcd_codec::DecodeRange(*body);
  }

  Status ListPrefix(const std::string& prefix, int64_t page_size,
                    const std::function<Status(const KeyValue&)>& each) override {
    if (page_size <= 0) return Status::InvalidArgument("etcd list: page size must be positive");
    RangeRequest r = RangeRequest::Prefix(prefix);
    r.limit = page_size;
    for (;;) {
      Result<RangeResult> page = Range(r);
      if (!page.ok()) return page.status();
      for (const KeyValue& kv : page->kvs) SHOAL_RETURN_IF_ERROR(each(kv));
      if (!page->more || page->kvs.empty()) return Status::OK();
      if (r.revision == 0) r.revision = page->revision;  // later pages read the same snapshot
      r.key = page->kvs.back().key + std::string(1, '\0');
    }
  }

  Result<int64_t> Put(const std::string& key, const std::string& value, int64_t lease) override {
    if (key.empty()) return Status::InvalidArgument("etcd put: the key is empty");
    Result<std::string> body =
        Call("put", "/v3/kv/put", etcd_codec::EncodePut(key, value, lease), Retry::kUnsent);
    if (!body.ok()) return body.status();
    return etcd_codec::DecodeRevision(*body);
  }

  Result<int64_t> Delete(const std::string& key, const std::string& range_end) override {
    if (key.empty()) return Status::InvalidArgument("etcd delete: the key is empty");
    Result<std::string> body = Call("delete", "/v3/kv/deleterange",
                                    etcd_codec::EncodeDelete(key, range_end), Retry::kUnsent);
    if (!body.ok()) return body.status();
    return etcd_codec::DecodeDeleted(*body);
  }

  Result<TxnResult> Txn(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) override {
    Result<std::string> body = Call(
        "txn", "/v3/kv/txn", etcd_codec::EncodeTxn(compares, success, failure), Retry::kUnsent);
    if (!body.ok()) return body.status();
    return etcd_codec::DecodeTxn(*body);
  }

  Result<int64_t> GrantLease(int64_t ttl_s) override {
    if (ttl_s <= 0) return Status::InvalidArgument("etcd lease grant: the TTL must be positive");
    Result<std::string> body =
        Call("lease grant", "/v3/lease/grant", etcd_codec::EncodeLeaseGrant(ttl_s), Retry::kUnsent);
    if (!body.ok()) return body.status();
    return etcd_codec::DecodeLeaseGrant(*body);
  }

  Result<int64_t> KeepAlive(int64_t lease) override {
    Result<std::string> body = Call("lease keepalive", "/v3/lease/keepalive",
                                    etcd_codec::EncodeLeaseId(lease), Retry::kAnywhere);
    if (!body.ok()) return body.status();
    Result<int64_t> ttl = etcd_codec::DecodeKeepAliveTtl(*body);
    if (ttl.ok() && *ttl <= 0) {
      return Status::NotFound("etcd lease keepalive: lease " + std::to_string(lease) +
                              " does not exist (expired or revoked)");
    }
    return ttl;
  }

  Status Revoke(int64_t lease) override {
    return Call("lease revoke", "/v3/lease/revoke", etcd_codec::EncodeLeaseId(lease),
                Retry::kUnsent)
        .status();
  }

  Status Ping() override {
    std::string failures;
    const size_t start = preferred_.load();
    for (size_t k = 0; k < pools_.size(); ++k) {
      const size_t i = (start + k) % pools_.size();
      Result<MemberStatus> st = StatusAt(i);
      if (st.ok() && st->leader_id != 0) return Status::OK();
      if (!failures.empty()) failures += "; ";
      failures +=
          st.ok() ? pools_[i]->endpoint().ToString() + " knows no leader" : st.status().message();
    }
    return Status::Unavailable("etcd has no healthy member: " + failures);
  }

  Result<MemberStatus> StatusOf(const std::string& endpoint) override {
    for (size_t i = 0; i < options_.endpoints.size(); ++i) {
      if (options_.endpoints[i] == endpoint) return StatusAt(i);
    }
    return Status::InvalidArgument("etcd status: " + endpoint + " is not a configured endpoint");
  }

 private:
  Result<MemberStatus> StatusAt(size_t i) {
    Attempt a = Once(i, "status", "/v3/maintenance/status", "{}", Retry::kAnywhere);
    if (!a.status.ok()) return a.status;
    Result<MemberStatus> st = etcd_codec::DecodeStatus(a.body);
    if (st.ok()) st->endpoint = pools_[i]->endpoint().ToString();
    return st;
  }

  // POSTs `body` to `path` on one member after another until one answers,
  // as the header describes; returns the 200 answer's body.
  Result<std::string> Call(const char* op, const char* path, const std::string& body, Retry retry) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
    const size_t n = pools_.size();
    std::vector<std::string> failures(n);
    const size_t start = preferred_.load();
    for (bool first = true;; first = false) {
      for (size_t k = 0; k < n; ++k) {
        if (!(first && k == 0) && Clock::now() >= deadline) break;
        const size_t i = (start + k) % n;
        Attempt a = Once(i, op, path, body, retry);
        if (a.status.ok()) {
          preferred_.store(i);
          return std::move(a.body);
        }
        if (!a.retryable) return a.status;
        failures[i] = a.status.message();
      }
      if (Clock::now() + kRoundPause >= deadline) break;
      std::this_thread::sleep_for(kRoundPause);
    }
    std::string joined;
    for (const std::string& f : failures) {
      if (f.empty()) continue;
      joined += (joined.empty() ? "" : "; ") + f;
    }
    return Status::Unavailable("etcd " + std::string(op) + ": no member answered within " +
                               std::to_string(options_.timeout_ms) + " ms (" + joined + ")");
  }

  Attempt Once(size_t i, const char* op, const char* path, const std::string& body, Retry retry) {
    HttpConnectionPool& pool = *pools_[i];
    const std::string where = std::string(op) + " via " + pool.endpoint().ToString();
    OriginHttpRequest req;
    req.method = "POST";
    req.target = path;
    req.headers.Add("Host", pool.endpoint().HostHeader());
    req.headers.Add("Content-Type", "application/json");
    req.body = reinterpret_cast<const uint8_t*>(body.data());
    req.body_len = body.size();
    OriginHttpResponse resp;
    ExchangeInfo info;
    std::unique_ptr<HttpConnection> conn = pool.Acquire();
    Status s = conn->Exchange(req, nullptr, &resp, &info);
    pool.Release(std::move(conn));

    Attempt a;
    if (!s.ok() && !s.IsUnavailable()) {
      // A rejected TLS certificate: configuration, not a failing member.
      a.status = s.WithContext("etcd " + std::string(op));
      return a;
    }
    if (!s.ok()) {
      if (retry == Retry::kAnywhere || !info.sent_any) {
        a.retryable = true;
        a.status = s;
      } else {
        a.status = Status::Unavailable("etcd " + where +
                                       ": outcome unknown, the request was sent but no answer "
                                       "came (" +
                                       s.message() + ")");
      }
      return a;
    }
    if (resp.status == 200) {
      a.body = std::move(resp.body);
      return a;
    }
    etcd_codec::GatewayError e = etcd_codec::DecodeGatewayError(resp.status, resp.body);
    const bool no_leader = e.message.find("no leader") != std::string::npos;
    const bool transient = e.code == kGrpcUnavailable || e.code == kGrpcDeadlineExceeded;
    if (no_leader || (transient && retry == Retry::kAnywhere)) {
      a.retryable = true;
      a.status = Status::Unavailable(where + ": " + e.message);
    } else if (transient) {
      a.status = Status::Unavailable("etcd " + where + ": outcome unknown (" + e.message + ")");
    } else {
      a.status = FromGrpc(e.code, "etcd " + where + ": " + e.message);
    }
    return a;
  }

  // Constant after construction.
  const EtcdOptions options_;
  std::vector<std::unique_ptr<HttpConnectionPool>> pools_;  // one per endpoint, in order

  std::atomic<size_t> preferred_{0};  // the member that answered last
};

}  // namespace

Status EtcdOptions::Validate() const {
  if (endpoints.empty()) return Status::InvalidArgument("etcd: no endpoints given");
  for (const std::string& e : endpoints) {
    Result<HttpEndpoint> ep = ParseHttpEndpoint(e);
    if (!ep.ok()) return ep.status().WithContext("etcd");
  }
  if (timeout_ms == 0 || connect_timeout_ms == 0 || request_timeout_ms == 0) {
    return Status::InvalidArgument("etcd: timeouts must be positive");
  }
  return Status::OK();
}

std::string PrefixRangeEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // no upper bound: every key from `prefix` on
}

RangeRequest RangeRequest::Prefix(const std::string& prefix) {
  RangeRequest r;
  r.key = prefix.empty() ? std::string(1, '\0') : prefix;
  r.range_end = PrefixRangeEnd(prefix);
  return r;
}

Compare Compare::Absent(const std::string& key) {
  return Compare{key, Target::kCreateRevision, Op::kEqual, 0, ""};
}

Compare Compare::ModRevisionIs(const std::string& key, int64_t rev) {
  return Compare{key, Target::kModRevision, Op::kEqual, rev, ""};
}

Compare Compare::ValueIs(const std::string& key, const std::string& value) {
  return Compare{key, Target::kValue, Op::kEqual, 0, value};
}

TxnOp TxnOp::Put(const std::string& key, const std::string& value, int64_t lease) {
  return TxnOp{Kind::kPut, key, value, lease, "", 0};
}

TxnOp TxnOp::Delete(const std::string& key) { return TxnOp{Kind::kDelete, key, "", 0, "", 0}; }

TxnOp TxnOp::DeletePrefix(const std::string& prefix) {
  RangeRequest r = RangeRequest::Prefix(prefix);
  return TxnOp{Kind::kDelete, r.key, "", 0, r.range_end, 0};
}

TxnOp TxnOp::Get(const std::string& key) { return TxnOp{Kind::kRange, key, "", 0, "", 0}; }

Result<std::unique_ptr<EtcdClient>> EtcdClient::Open(const EtcdOptions& options) {
  SHOAL_RETURN_IF_ERROR(options.Validate());
  std::vector<HttpEndpoint> endpoints;
  bool any_tls = false;
  for (const std::string& e : options.endpoints) {
    endpoints.push_back(*ParseHttpEndpoint(e));
    any_tls = any_tls || endpoints.back().tls;
  }
  std::shared_ptr<TlsClientContext> tls;
  if (any_tls) {
    Result<std::shared_ptr<TlsClientContext>> made = TlsClientContext::Make(true, options.ca_file);
    if (!made.ok()) return made.status().WithContext("etcd");
    tls = *made;
  }
  return std::unique_ptr<EtcdClient>(new EtcdClientImpl(options, std::move(endpoints), tls));
}

}  // namespace shoal::tracker
