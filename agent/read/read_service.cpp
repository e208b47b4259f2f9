// ReadService: construction, the routes, and what the plain and S3 faces
// share (credentials, model lookups, file answers, errors, metrics).
#include "read/read_service.h"

#include <arpa/inet.h>

#include "read/byte_range.h"
#include "read/preconditions.h"
#include "read/range_source.h"
#include "read/s3_xml.h"
#include "shoal/log.h"

namespace shoal {

namespace {

using Clock = std::chrono::steady_clock;

// True for 127.0.0.0/8 and ::1 (and ::ffff:127.x), and the agent's unix
// socket: the node itself.
bool IsLoopback(const std::string& remote) {
  if (remote == "unix") return true;
  std::string host = remote.substr(0, remote.rfind(':'));
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.rfind("::ffff:", 0) == 0) host = host.substr(7);
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return host == "::1";
}

// Counts bytes handed to the reader in `served`, and observes the time to
// the first of them in the call's histogram.
std::function<void(uint64_t)> ServedMeter(const ReadCall& call, Counter* served) {
  struct FirstByte {
    std::atomic<bool> seen{false};
  };
  auto first = std::make_shared<FirstByte>();
  Histogram* ttfb = call.ttfb;
  Clock::time_point start = call.start;
  return [first, ttfb, served, start](uint64_t n) {
    if (!first->seen.exchange(true))
      ttfb->Observe(std::chrono::duration<double>(Clock::now() - start).count());
    served->Increment(n);
  };
}

}  // namespace

std::shared_ptr<ReadFile> ReadFileOf(const std::shared_ptr<const ResolvedModel>& model,
                                     const FileEntry& file) {
  auto read = std::make_shared<ReadFile>();
  read->ns = model->ns;
  read->name = model->name;
  read->version = model->version;
  read->file = file;
  read->piece_size = model->manifest.piece_size;
  read->chunks = file.ChunkIds();
  if (const VersionBundles::Place* at = model->bundles.Find(file)) {
    // Shares the model's lifetime, whose manifest the pointers point into.
    read->bundle = std::shared_ptr<const std::vector<const FileEntry*>>(
        model, &model->bundles.bundles[at->bundle]);
    read->bundle_index = at->bundle;
    read->bundle_piece = at->piece;
  }
  return read;
}

const char* ReadApiName(ReadApi api) {
  switch (api) {
    case ReadApi::kPlain:
      return "plain";
    case ReadApi::kS3:
      return "s3";
    case ReadApi::kHub:
      return "hub";
  }
  return "plain";
}

void ReadCall::Finish(HttpResponse r) {
  metrics
      ->counter("shoal_agent_read_requests_total", "Read requests by API and HTTP status",
                {{"api", ReadApiName(api)}, {"status", std::to_string(r.status)}})
      .Increment();
  if (!r.source || method == "HEAD")
    ttfb->Observe(std::chrono::duration<double>(Clock::now() - start).count());
  respond(std::move(r));
}

ReadService::ReadService(const ReadServiceOptions& options, ChunkStore& store,
                         TorrentEngine& engine, ChunkFetcher& fetcher,
                         std::function<std::string()> announce_url,
                         const RevocationList& revocations, MetricsRegistry& metrics)
    : options_(options),
      store_(store),
      revocations_(revocations),
      metrics_(metrics),
      slots_(std::make_shared<ReadSlots>(std::max<uint32_t>(1, options.max_reads_per_token))),
      resolver_(options.tracker, std::chrono::milliseconds(options.cache_ms)),
      fetcher_(options.fetch, store, engine, fetcher, std::move(announce_url)),
      workers_(std::max(1, options.workers)) {
  for (int api = 0; api < kReadApis; ++api) {
    ttfb_[api] =
        &metrics.histogram("shoal_agent_read_ttfb_seconds",
                           "Time from a read request to its first body byte (or its answer)",
                           Histogram::ExponentialBuckets(0.001, 2, 15),
                           {{"api", ReadApiName(static_cast<ReadApi>(api))}});
    bytes_[api] = &metrics.counter("shoal_agent_read_bytes_total", "Body bytes handed to readers",
                                   {{"api", ReadApiName(static_cast<ReadApi>(api))}});
    throttled_[api] = &metrics.counter(
        "shoal_agent_read_throttled_total",
        "Reads refused because their token had --read-max-per-token reads in flight",
        {{"api", ReadApiName(static_cast<ReadApi>(api))}});
  }
  metrics.AddCollector([this](MetricsWriter& w) {
    const ReadFetchCounters& c = fetcher_.counters();
    w.AddCounter("shoal_agent_read_origin_chunks_total", "Chunks reads fetched from the origin",
                 static_cast<double>(c.origin_chunks.load()));
    w.AddCounter("shoal_agent_read_origin_bytes_total", "Bytes reads fetched from the origin",
                 static_cast<double>(c.origin_bytes.load()));
    w.AddCounter("shoal_agent_read_origin_failures_total", "Origin fetches for reads that failed",
                 static_cast<double>(c.origin_failures.load()));
  });
}

ReadService::~ReadService() { Stop(); }

void ReadService::Stop() {
  stopped_ = true;
  workers_.Stop();
  fetcher_.Stop();
}

void ReadService::AddRoutes(HttpServer& server) {
  for (const char* method : {"GET", "HEAD"}) {
    server.HandleAsync(method, "/v1/models/*", [this](const HttpRequest& r, HttpResponder respond) {
      ServePlain(r, std::move(respond));
    });
  }
  for (const char* method : {"GET", "HEAD", "PUT", "POST", "DELETE"}) {
    server.HandleAsync(method, "/*", [this](const HttpRequest& r, HttpResponder respond) {
      ServeS3(r, std::move(respond));
    });
  }
}

std::shared_ptr<ReadCall> ReadService::Begin(ReadApi api, const HttpRequest& request,
                                             HttpResponder respond) {
  auto call = std::make_shared<ReadCall>();
  call->api = api;
  call->method = request.method;
  call->resource = request.path;
  call->range = request.headers.Get("Range");
  call->conditions.if_match = request.headers.Get("If-Match");
  call->conditions.if_none_match = request.headers.Get("If-None-Match");
  call->conditions.if_modified_since = request.headers.Get("If-Modified-Since");
  call->conditions.if_unmodified_since = request.headers.Get("If-Unmodified-Since");
  call->if_range = request.headers.Get("If-Range");
  call->query = request.query;
  call->respond = std::move(respond);
  call->start = Clock::now();
  call->metrics = &metrics_;
  call->ttfb = ttfb_[static_cast<int>(api)];
  char id[24];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(++request_ids_));
  call->request_id = id;
  return call;
}

bool ReadService::TakeSlot(const std::shared_ptr<ReadCall>& call) {
  call->slot = slots_->TryTake(call->token);
  if (call->slot) return true;
  throttled_[static_cast<int>(call->api)]->Increment();
  Fail(call, {ReadFailure::kSlowDown,
              "this token has " + std::to_string(slots_->max_per_token()) +
                  " reads in flight already, the most an agent serves one token at once; retry "
                  "after one ends",
              {{"Retry-After", "1"}}});
  return false;
}

std::string ReadService::AnonymousToken(const HttpRequest& request) const {
  if (!options_.anonymous_loopback || !IsLoopback(request.remote_address)) return "";
  return options_.agent_token;
}

bool ReadService::NotRevoked(const std::shared_ptr<ReadCall>& call) {
  const uint64_t generation = revocations_.generation();
  if (generation == 0) return true;
  if (purged_generation_.exchange(generation) != generation) {
    resolver_.Forget([this](const std::string& token) {
      Result<TokenClaims> claims = PeekTokenClaims(token);
      return claims.ok() && revocations_.Find(*claims).has_value();
    });
  }
  // Unsigned claims are enough here: they can only make a token look
  // revoked, never valid; the tracker still verifies every token it is sent.
  Result<TokenClaims> claims = PeekTokenClaims(call->token);
  if (!claims.ok()) return true;  // the tracker will refuse it, worded its way
  Status s = revocations_.Check(*claims);
  if (s.ok()) return true;
  metrics_
      .counter("shoal_agent_read_revoked_total",
               "Read requests refused because their token was revoked")
      .Increment();
  Fail(call, {ReadFailure::kBadToken, s.message()});
  return false;
}

void ReadService::WithModel(std::shared_ptr<ReadCall> call, const ObjectAddress& address,
                            std::function<void(const Resolution&)> then) {
  if (auto hit = resolver_.Cached(call->token, address.ns, address.name, address.ref)) {
    return then(Resolution{hit, {}});
  }
  bool queued = workers_.Post([this, call, address, then] {
    then(resolver_.Resolve(call->token, address.ns, address.name, address.ref));
  });
  if (!queued) Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
}

void ReadService::Fail(const std::shared_ptr<ReadCall>& call, ReadError error) {
  const int status = HttpStatusOf(error.failure, call->api == ReadApi::kS3);
  HttpResponse r;
  if (call->api == ReadApi::kS3) {
    r.status = status;
    r.headers.Set("Content-Type", "application/xml");
    r.headers.Set("x-amz-request-id", call->request_id);
    r.body = S3ErrorXml(S3CodeOf(error.failure), error.message, call->resource, call->request_id);
  } else {
    r = HttpResponse::Error(status, error.message);
    if (status == 401) r.headers.Set("WWW-Authenticate", "Bearer realm=\"shoal\"");
  }
  if (call->api == ReadApi::kHub) {
    // As the hub words them, for its clients' error types.
    if (error.failure == ReadFailure::kNoCredentials || error.failure == ReadFailure::kAccessDenied)
      r.headers.Set("X-Error-Code", "GatedRepo");
    std::string line = error.message.substr(0, 512);
    for (char& c : line) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    }
    r.headers.Set("X-Error-Message", line);
  }
  for (const auto& [name, value] : error.headers) r.headers.Set(name, value);
  if (status >= 500 && error.failure != ReadFailure::kSlowDown) {  // a flood must not flood the log
    Log(LogLevel::kWarn, "read.failed",
        {{"path", call->resource}, {"status", status}, {"error", error.message}});
  }
  call->Finish(std::move(r));
}

void ReadService::AnswerFile(std::shared_ptr<ReadCall> call,
                             const std::shared_ptr<const ResolvedModel>& model,
                             const FileEntry& file) {
  const std::string etag = call->etag.empty() ? model->ETag(file) : call->etag;
  HttpResponse r;
  r.headers.Set("Accept-Ranges", "bytes");
  r.headers.Set("ETag", etag);
  r.headers.Set("Last-Modified", model->LastModifiedHttp());
  r.headers.Set("Content-Type", "application/octet-stream");
  if (call->api == ReadApi::kS3) r.headers.Set("x-amz-request-id", call->request_id);
  for (const auto& [name, value] : call->reply_headers) r.headers.Set(name, value);
  switch (EvaluatePreconditions(call->conditions, etag, model->manifest.created_at_ms / 1000)) {
    case PreconditionOutcome::kProceed:
      break;
    case PreconditionOutcome::kNotModified:
      r.status = 304;
      return call->Finish(std::move(r));
    case PreconditionOutcome::kFailed:
      return Fail(
          call, {ReadFailure::kPreconditionFailed,
                 "'" + file.path + "' is " + etag + ", last modified " + model->LastModifiedHttp() +
                     ", which does not meet If-Match or If-Unmodified-Since"});
  }
  // If-Range with another validator: the range is stale, send everything.
  std::optional<std::string> range = call->range;
  if (call->if_range && *call->if_range != etag) range.reset();
  RangeAnswer answer = AnswerRange(range, file.size);
  if (answer.kind == RangeAnswer::Kind::kUnsatisfiable) {
    ReadError e{ReadFailure::kInvalidRange, "range '" + range->substr(0, 100) + "' is outside '" +
                                                file.path + "' (" + std::to_string(file.size) +
                                                " bytes)"};
    e.headers.emplace_back("Content-Range", "bytes */" + std::to_string(file.size));
    return Fail(call, std::move(e));
  }
  ByteRange bytes = answer.range;
  if (answer.kind == RangeAnswer::Kind::kPartial) {
    r.status = 206;
    r.headers.Set("Content-Range", ContentRange(bytes, file.size));
  } else if (file.size == 0) {
    return call->Finish(std::move(r));
  } else {
    bytes = ByteRange{0, file.size - 1};
  }
  std::shared_ptr<ReadFile> read = ReadFileOf(model, file);
  // The body holds the read's slot until it is sent or dropped.
  auto meter = [meter = ServedMeter(*call, bytes_[static_cast<int>(call->api)]),
                slot = call->slot](uint64_t n) { meter(n); };
  auto source = std::make_shared<RangeSource>(fetcher_, store_, read, bytes, meter);
  r.source = source;
  r.stream_length = static_cast<int64_t>(bytes.length());
  if (call->method == "HEAD") return call->Finish(std::move(r));
  // The header promises stream_length bytes: send it only with the first
  // of them in hand, or fail before it.
  auto response = std::make_shared<HttpResponse>(std::move(r));
  const std::string path = file.path;
  source->Prime(std::chrono::milliseconds(options_.first_byte_timeout_ms),
                [this, call, response, path](Status s) {
                  if (s.ok()) return call->Finish(std::move(*response));
                  FailFirstBytes(call, path, s);
                });
}

void ReadService::FailFirstBytes(const std::shared_ptr<ReadCall>& call, const std::string& path,
                                 const Status& s) {
  const int64_t within_ms = options_.first_byte_timeout_ms;
  const int64_t retry_s = std::max<int64_t>(1, std::min<int64_t>(within_ms / 1000, 30));
  ReadError e{
      s.code() == Status::Code::kCorruption ? ReadFailure::kInternal : ReadFailure::kUnavailable,
      "'" + path + "' could not be read: " + s.message() +
          "; retry later, or check that a peer or the origin holds the model"};
  if (e.failure == ReadFailure::kUnavailable)
    e.headers.emplace_back("Retry-After", std::to_string(retry_s));
  metrics_
      .counter("shoal_agent_read_first_byte_failures_total",
               "Reads refused before their header because their first chunk could not be had")
      .Increment();
  Fail(call, std::move(e));
}

}  // namespace shoal
