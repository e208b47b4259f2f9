// ReadService: pull-through reads for inference pods, on the agent's HTTP
// server. Two faces over the same files:
//
//   GET/HEAD /v1/models/{ns}/{name}:{ref}/files/{path}   Range, ETag, ...
//   GET      /v1/models/{ns}/{name}:{ref}/manifest       the manifest, JSON
//            "Authorization: Bearer <read token>"
//
//   S3, path-style or virtual-host-style: bucket = namespace,
//   key = {name}/{ref}/{path}. GetObject (with Range, partNumber, the
//   response-* overrides and conditional headers), HeadObject,
//   ListObjects v1 and v2, HeadBucket, GetBucketLocation and ListBuckets;
//   errors as S3 XML. SigV4 with the read token as access key ID and as
//   secret key.
//
//   A Hugging Face–style hub (AddHubRoutes, on a listener of its own, since
//   its paths overlap S3's): the model, tree and resolve calls of the hub's
//   clients; see read/hub_api.h.
//
// Every request resolves its model through the tracker with the caller's
// token (see ModelResolver), so the tracker's scopes decide access. With
// anonymous_loopback, a request with no credentials from a loopback
// address or the agent's unix socket reads with the agent's own token.
//
// Before that, each request's token is matched against the tracker's
// revocations as the agent last heard them (one heartbeat old at most):
// a revoked token is refused at once (401, or S3's 403 InvalidAccessKeyId),
// and the resolutions kept for revoked tokens are dropped.
//
// Bytes are sent as their chunks arrive (RangeSource over ReadFetcher), so a
// cold range read starts once the chunks under it are here, not the file.
// The status line and Content-Length go out only once the range's first
// chunk is here: if it cannot be had within first_byte_timeout_ms the read
// fails cleanly (503 with Retry-After) instead of promising a body it
// cannot start.
//
// Thread-safety: handlers run on the HTTP server's threads; blocking work
// runs on the service's own workers.
#ifndef SHOAL_AGENT_READ_READ_SERVICE_H_
#define SHOAL_AGENT_READ_READ_SERVICE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "read/hub_api.h"
#include "read/model_resolver.h"
#include "read/object_address.h"
#include "read/object_listing.h"
#include "read/read_call.h"
#include "read/read_error.h"
#include "read/read_fetcher.h"
#include "read/read_slots.h"
#include "read/s3_xml.h"
#include "shoal/chunk_store.h"
#include "shoal/origin.h"
#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"
#include "shoal/token_revocations.h"
#include "shoal/work_queue.h"

namespace shoal {

class ChunkFetcher;
class TorrentEngine;

// A ListObjects request as the S3 face read it: its paging, its version
// and whether it asked for encoding-type=url.
struct S3Listing {
  ObjectListRequest request;
  ListVersion version = ListVersion::kV2;
  bool url = false;
};

// What a read of `file` of `model` fetches: the file, and the small-file
// bundle it moves in, if any. Shares the model's lifetime.
std::shared_ptr<ReadFile> ReadFileOf(const std::shared_ptr<const ResolvedModel>& model,
                                     const FileEntry& file);

struct ReadServiceOptions {
  TrackerEndpoint tracker;                // the tracker's RPC
  std::string agent_token;                // used for anonymous loopback reads
  bool anonymous_loopback = false;        // allow credential-less reads from 127.0.0.0/8 and ::1
  int64_t cache_ms = 10000;               // how long a (token, model) resolution is reused
  int workers = 8;                        // tracker lookups in flight
  int64_t first_byte_timeout_ms = 45000;  // a body's first chunk is awaited this long before 503
  uint32_t max_reads_per_token = 64;      // in flight, to the last body byte; more get SlowDown
  // Host names that, after "{bucket}.", make an S3 request virtual-host
  // style; a suffix whose first label is "s3" always does.
  std::vector<std::string> s3_virtual_host_suffixes = {"localhost"};
  // Hub organisations that name another namespace (org -> namespace); any
  // other organisation is the namespace of the same name.
  std::map<std::string, std::string> hub_orgs;
  ReadFetcherOptions fetch;
};

class ReadService {
 public:
  // `fetcher` is the agent's way to the origin (it may have none).
  // `announce_url` gives the tracker URL for new
  // torrents; `revocations` the tokens to refuse. Everything passed in must
  // outlive the service.
  ReadService(const ReadServiceOptions& options, ChunkStore& store, TorrentEngine& engine,
              ChunkFetcher& fetcher, std::function<std::string()> announce_url,
              const RevocationList& revocations, MetricsRegistry& metrics);
  ~ReadService();
  ReadService(const ReadService&) = delete;
  ReadService& operator=(const ReadService&) = delete;

  // Declares the routes: /v1/models/* and, for S3, every other path.
  // REQUIRES: before server.Start().
  void AddRoutes(HttpServer& server);
  // Declares the hub face's routes: every path. REQUIRES: as AddRoutes, on
  // a server with no other routes but the standard ones.
  void AddHubRoutes(HttpServer& server);

  // Where chunks for reads come from; see ReadFetcher::set_request_origin.
  ReadFetcher& fetcher() { return fetcher_; }
  // How reads resolve models; `shoal mount` resolves through it too.
  ModelResolver& resolver() { return resolver_; }

  // Fails reads still waiting and stops the workers; later requests get
  // 503. REQUIRES: called before the HTTP server stops.
  void Stop();

 private:
  void ServePlain(const HttpRequest& request, HttpResponder respond);
  void ServeS3(const HttpRequest& request, HttpResponder respond);
  void ServeHub(const HttpRequest& request, HttpResponder respond);
  // The version a hub revision names (a tag, version, or imported commit),
  // and for a miss the hub's error code: RepoNotFound or RevisionNotFound.
  // Blocks on the tracker.
  Resolution ResolveHubRevision(const std::string& token, const std::string& ns,
                                const std::string& name, const std::string& revision,
                                const std::string& ref);
  // `host` is the request's Host header, for the tree's next-page link.
  void AnswerHub(const std::shared_ptr<ReadCall>& call, const std::string& host,
                 const HubRequest& hub, const std::shared_ptr<const ResolvedModel>& model);
  void ServeS3Object(std::shared_ptr<ReadCall> call, const std::string& bucket,
                     const std::string& key);
  void ServeS3Bucket(std::shared_ptr<ReadCall> call, const std::string& bucket);
  void ServeS3Buckets(std::shared_ptr<ReadCall> call);
  // HeadBucket and GetBucketLocation: answers `ok` if the token may read
  // `bucket`, else 403.
  void ServeS3BucketAccess(std::shared_ptr<ReadCall> call, const std::string& bucket,
                           std::function<HttpResponse()> ok);
  void ServeS3List(std::shared_ptr<ReadCall> call, const std::string& bucket,
                   const S3Listing& listing);
  void ServeS3ListTags(std::shared_ptr<ReadCall> call, const std::string& bucket,
                       const S3Listing& listing);
  void AnswerList(const std::shared_ptr<ReadCall>& call, const std::string& bucket,
                  const S3Listing& listing, const std::vector<ObjectEntry>& entries);
  static void AppendEntries(const ResolvedModel& model, const std::string& ref,
                            std::vector<ObjectEntry>* out);

  // Runs `then` with the model, at once if it is cached, else on a worker.
  void WithModel(std::shared_ptr<ReadCall> call, const ObjectAddress& address,
                 std::function<void(const Resolution&)> then);
  // The answer for one file: 200, 206 or 416 with its headers and body.
  void AnswerFile(std::shared_ptr<ReadCall> call, const std::shared_ptr<const ResolvedModel>& model,
                  const FileEntry& file);
  // Refuses a read whose first bytes could not be had (`s`) within
  // first_byte_timeout_ms: 503 with Retry-After, or 500 for bad data.
  void FailFirstBytes(const std::shared_ptr<ReadCall>& call, const std::string& path,
                      const Status& s);
  void Fail(const std::shared_ptr<ReadCall>& call, ReadError error);
  // The token for a request with no credentials, or "".
  std::string AnonymousToken(const HttpRequest& request) const;
  // False, after failing the call, if its token has been revoked. Drops the
  // kept resolutions of revoked tokens whenever the revocations grew.
  bool NotRevoked(const std::shared_ptr<ReadCall>& call);
  std::shared_ptr<ReadCall> Begin(ReadApi api, const HttpRequest& request, HttpResponder respond);
  // Counts the call against its token's reads in flight; false (and the
  // call answered 429, or 503 SlowDown for S3) if the token has
  // max_reads_per_token already.
  bool TakeSlot(const std::shared_ptr<ReadCall>& call);

  // Constant after construction.
  const ReadServiceOptions options_;
  ChunkStore& store_;
  const RevocationList& revocations_;
  MetricsRegistry& metrics_;
  Histogram* ttfb_[kReadApis];
  Counter* bytes_[kReadApis];
  Counter* throttled_[kReadApis];
  std::shared_ptr<ReadSlots> slots_;

  ModelResolver resolver_;
  ReadFetcher fetcher_;
  WorkQueue workers_;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> request_ids_{0};
  std::atomic<uint64_t> purged_generation_{0};  // revocations applied to resolver_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_READ_SERVICE_H_
